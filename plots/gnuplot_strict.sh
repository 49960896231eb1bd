#!/bin/sh
# gnuplot_strict.sh - runs gnuplot with the given arguments and fails on any message it prints:
# gnuplot exits 0 after warnings (an empty plot, an undefined value, a bad range) and draws a
# picture that says nothing; here a warning is an error, shown with the script's name.
# Usage: sh plots/gnuplot_strict.sh -e "vars" plots/NAME.gp
msg=$(gnuplot "$@" 2>&1 >/dev/null)
rc=$?
if [ $rc -ne 0 ] || [ -n "$msg" ]; then
  for last; do :; done
  printf '%s\n' "$msg" >&2
  echo "plot failed: gnuplot $last (exit $rc${msg:+, with the message above})" >&2
  exit 1
fi
