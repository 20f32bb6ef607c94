#!/usr/bin/env bash
# Cross-builds edgert for aarch64-unknown-linux-gnu (Jetson): the `edgert` CLI and
# libedgert.so/.a (C ABI), release profile, into target/aarch64/.
#
#   cross/build.sh                 glibc >= 2.34 (Debian 12 toolchain; JetPack 6 has 2.35)
#   cross/build.sh --glibc 2.31    glibc >= 2.31 (JetPack 5) via cargo-zigbuild; output in
#                                  target/aarch64-gnu2.31/
#   cross/build.sh [--glibc V] -- EXTRA_CARGO_ARGS...
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$CROSS_ROOT"
glibc=""
if [ "${1:-}" = "--glibc" ]; then
  glibc=$2
  shift 2
fi
[ "${1:-}" = "--" ] && shift
cross_check_tools || exit 1
if [ -z "$glibc" ]; then
  "$CARGO" build "${CROSS_ARGS[@]}" --release "${CROSS_PACKAGES[@]}" "$@"
  echo "built: $CROSS_OUT/{edgert,libedgert.so,libedgert.a} (needs glibc >= 2.34)"
else
  # cargo-zigbuild links with zig against the glibc version in the target name; it uses
  # the same Debian rustc and aarch64 std. Needs `cargo install --locked cargo-zigbuild`
  # and `pip install ziglang` (python -m ziglang is found by cargo-zigbuild).
  command -v cargo-zigbuild >/dev/null 2>&1 || {
    echo "cross/build.sh: --glibc needs cargo-zigbuild (cargo install --locked cargo-zigbuild) and ziglang (pip install ziglang)" >&2
    exit 1
  }
  export CARGO_TARGET_DIR="$CROSS_ROOT/target/aarch64-gnu$glibc"
  export CARGO
  cargo-zigbuild zigbuild --target "$CROSS_TARGET.$glibc" --locked --release "${CROSS_PACKAGES[@]}" "$@"
  echo "built: $CARGO_TARGET_DIR/$CROSS_TARGET/release/{edgert,libedgert.so,libedgert.a} (needs glibc >= $glibc)"
fi
