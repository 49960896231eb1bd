#!/usr/bin/env bash
# gpu_env.sh - sourced by the GPU machine's scripts (run_gpu_tests.sh, bench/before_after.sh):
# unpacks the Debian packages that `make devdeps` downloads (.devdeps, carried into the call;
# the machine has no -dev packages) into /tmp/zipage-deps (GnuTLS only where the image lacks it), puts their libraries on
# LD_LIBRARY_PATH, and defines gpu_build SRC BUILD: configure SRC with CUDA (sm_90, warnings
# as errors) and build it, printing only errors, warnings and the last target line.
# Run from the repository root.
DEPS=/tmp/zipage-deps
A=x86_64-linux-gnu
mkdir -p "$DEPS"
for f in .devdeps/*.deb; do dpkg -x "$f" "$DEPS"; done
# libmicrohttpd (zipage serve) links GnuTLS: the image's if it has one, else the carried one
if ! ldconfig -p 2>/dev/null | grep -q "libgnutls.so.30 "; then
  for f in .devdeps/fallback/*.deb; do dpkg -x "$f" "$DEPS/fallback"; done
  FALLBACK="$DEPS/fallback/usr/lib/$A:$DEPS/fallback/lib/$A:"
  echo "gpu_env: no libgnutls.so.30 on this machine; the carried GnuTLS is used" >&2
fi
export LD_LIBRARY_PATH="$DEPS/usr/lib/$A:$DEPS/usr/lib/$A/openblas-openmp:${FALLBACK:-}${LD_LIBRARY_PATH:-}"

gpu_build() {
  # the unpacked packages' headers as system headers, as /usr/include's are here (seccomp.h's
  # initializers would fail -Werror otherwise)
  cmake -S "$1" -B "$2" -DZIPAGE_CUDA=ON -DZIPAGE_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH="$DEPS/usr" \
    -DCMAKE_C_FLAGS="-isystem $DEPS/usr/include" \
    -DZP_OPENBLAS_LIB="$DEPS/usr/lib/$A/openblas-openmp/libopenblas.so" -DZP_CBLAS_INCLUDE="$DEPS/usr/include/$A/openblas-openmp" \
    >/dev/null || return 1
  cmake --build "$2" -j "$(nproc)" 2>&1 | grep -E "error|warning|Built target zipage$"
  [ "${PIPESTATUS[0]}" -eq 0 ]
}
