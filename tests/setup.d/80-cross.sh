#!/usr/bin/env bash
# aarch64 cross-build (cross/): Debian's own Rust (rustc-web/cargo-web, whose aarch64 std
# comes as the multiarch package libstd-rust-web-dev:arm64), the aarch64 GNU linker and
# libc, and qemu-user to run the tests. Idempotent: installs only what is missing.
# On a host without apt (or not Debian 12-like) it says so and leaves the stage to skip.
set -euo pipefail
[ "$(uname -m)" = "x86_64" ] || { echo "setup cross: host is $(uname -m), nothing to cross-build"; exit 0; }
command -v apt-get >/dev/null 2>&1 || { echo "setup cross: no apt-get; cross stage will skip"; exit 0; }
sudo_cmd=""
[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"

pkgs=(rustc-web cargo-web libstd-rust-web-dev:arm64 gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $sudo_cmd dpkg --add-architecture arm64
fi
echo "setup cross: installing ${missing[*]}"
# Other set-up scripts may hold apt's lock: wait for it rather than fail.
apt=($sudo_cmd apt-get -o DPkg::Lock::Timeout=600)
"${apt[@]}" update -qq
"${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
