#!/usr/bin/env bash
# Stage `cross`: the C ABI and the aarch64 (Jetson) build.
#  1. native: builds the `edgert` CLI and libedgert (release), the C example against the
#     static and the shared library, and runs both on BlazeFace against the golden outputs;
#  2. aarch64: cross-builds the CLI and libedgert (cross/build.sh), runs edgert-core's unit
#     tests and the C ABI tests under qemu (cross/test.sh), builds and runs the C example
#     under qemu, and checks that `edgert run` on BlazeFace gives the x86-64 outputs within
#     the f32 tolerance.
# Prints `stage cross: ok (...)` or `stage cross: FAIL (...)`; skips part 2 (saying so) on a
# host without the cross toolchain (tests/setup.d/80-cross.sh installs it on Debian/Ubuntu).
set -uo pipefail
cd "$(dirname "$0")/../.."
t0=$SECONDS
step() { echo "-- cross: $*"; }
fail() {
  echo "stage cross: FAIL ($*; $((SECONDS - t0)) s)"
  exit 1
}
model=models/blazeface_short.onnx
gold=tests/goldens/blazeface_short
work=target/cross-stage
rm -rf "$work" && mkdir -p "$work"

step "native: edgert CLI and libedgert"
cargo build --locked --release -p edgert -p edgert-capi || fail "native build"
native=target/release
apps/c-example/build.sh cc "$native" "$work/native" || fail "native C example build"
for kind in static shared; do
  step "native C example ($kind)"
  "$work/native/c-example-$kind" "$model" "$gold/input_0.npy" "$gold" || fail "native C example ($kind)"
done
"$native/edgert" run "$model" --input "input=$gold/input_0.npy" --output-dir "$work/x86_64" >/dev/null ||
  fail "native edgert run"
t_native=$((SECONDS - t0))

if [ "$(uname -m)" != x86_64 ]; then
  echo "stage cross: ok (native only: host is $(uname -m); $t_native s)"
  exit 0
fi
source cross/env.sh
if ! cross_check_tools; then
  echo "stage cross: ok (native C example only; aarch64 skipped: no cross toolchain; $t_native s)"
  exit 0
fi

t1=$SECONDS
step "aarch64: build"
cross/build.sh || fail "aarch64 build"
t_build=$((SECONDS - t1))

t1=$SECONDS
step "aarch64: edgert-core unit tests and C ABI tests under qemu"
cross/test.sh 2>&1 | tee "$work/qemu-tests.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || fail "aarch64 tests under qemu"
passed=$(grep -Eo '^test result: ok\. [0-9]+ passed' "$work/qemu-tests.txt" | awk '{s += $4} END {print s + 0}')
t_tests=$((SECONDS - t1))

t1=$SECONDS
step "aarch64: C example under qemu"
apps/c-example/build.sh aarch64-linux-gnu-gcc "$CROSS_OUT" "$work/aarch64" || fail "aarch64 C example build"
for kind in static shared; do
  qemu-aarch64-static "$work/aarch64/c-example-$kind" "$model" "$gold/input_0.npy" "$gold" ||
    fail "aarch64 C example ($kind) under qemu"
done

step "aarch64: edgert run on BlazeFace vs x86-64"
# ELF e_machine 0xb7 is AArch64.
python3 -c 'import sys; sys.exit(open(sys.argv[1], "rb").read(20)[18:20] != b"\xb7\x00")' "$CROSS_OUT/edgert" || fail "$CROSS_OUT/edgert is not an aarch64 binary"
qemu-aarch64-static "$CROSS_OUT/edgert" run "$model" --input "input=$gold/input_0.npy" --output-dir "$work/aarch64-out" \
  >/dev/null || fail "aarch64 edgert run under qemu"
python3 cross/compare_npy.py "$work/aarch64-out" "$work/x86_64" || fail "aarch64 outputs differ from x86-64"
t_run=$((SECONDS - t1))

echo "stage cross: ok (native C example ${t_native} s; aarch64 build ${t_build} s, ${passed} tests under qemu ${t_tests} s, C example + edgert run under qemu ${t_run} s; total $((SECONDS - t0)) s)"
