#!/usr/bin/env bash
# left_out.sh - what `make test` did not run, said after it: the tests labelled slow and gpu in
# the CTest tree BUILD, with how to run them. Usage: left_out.sh BUILD
set -u
cd "$1" || exit 1
count() { ctest -N -L "$1" | sed -n 's/^Total Tests: \([0-9]*\)$/\1/p'; }
echo "make test ran the tests labelled cpu; left out: $(count slow) slow (make test-slow) and $(count gpu) gpu" \
     "(on a GPU machine: cd $1 && ctest -L gpu; tests/device/README.md)"
