# Sourced by the cross/ scripts: the toolchain and paths of the aarch64 cross-build.
#
# Debian's own Rust (packages rustc-web, cargo-web, libstd-rust-web-dev:arm64) carries the
# aarch64 std; rustup's toolchains here do not, and rustup's proxies in PATH would shadow
# Debian's binaries, so both are named by full path. The aarch64 artifacts go to their own
# target dir so they never clobber the host build.
CROSS_TARGET=aarch64-unknown-linux-gnu
CROSS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CARGO_TARGET_DIR="${CROSS_TARGET_DIR:-$CROSS_ROOT/target/aarch64}"
CARGO="${CROSS_CARGO:-/usr/bin/cargo}"
export RUSTC="${CROSS_RUSTC:-/usr/bin/rustc}"
export RUSTDOC="${CROSS_RUSTDOC:-/usr/bin/rustdoc}"
# rustup's variables would redirect Debian's cargo to rustup's toolchain.
unset RUSTUP_TOOLCHAIN RUSTC_WRAPPER
CROSS_ARGS=(--target "$CROSS_TARGET" --config "$CROSS_ROOT/cross/cargo-config.toml" --locked)
# The crates cross-built: the runtime core, the CUDA backend (cudarc with dynamic loading:
# no toolkit needed to build), the C ABI and the CLI. The GStreamer media crates are not
# (they need the arm64 GStreamer dev packages: see cross/README.md).
CROSS_PACKAGES=(-p edgert-core -p edgert-cuda -p edgert-capi -p edgert)
CROSS_OUT="$CARGO_TARGET_DIR/$CROSS_TARGET/release"

# Exits 0 with a `skipped:` line when the toolchain is missing (e.g. a host without apt):
# call as `cross_check_tools || exit 0` where skipping is acceptable.
cross_check_tools() {
  local t missing=()
  for t in "$CARGO" "$RUSTC" aarch64-linux-gnu-gcc qemu-aarch64-static; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
  done
  if [ ! -d "$("$RUSTC" --print sysroot 2>/dev/null)/lib/rustlib/$CROSS_TARGET" ]; then
    missing+=("aarch64 std (libstd-rust-web-dev:arm64)")
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    echo "skipped: no aarch64 cross toolchain (missing: ${missing[*]}); run tests/setup.d/80-cross.sh"
    return 1
  fi
}
