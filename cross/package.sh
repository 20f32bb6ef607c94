#!/usr/bin/env bash
# Packs a Jetson tarball from an aarch64 build (cross/build.sh, or a native build on the
# Jetson): the `edgert` CLI, libedgert.so and libedgert.a, include/edgert.h, a pkg-config
# file, the models with their provenance, and the C example's source.
#
#   cross/package.sh [--glibc 2.31] [--from DIR] [--out DIR]
#     --glibc V   package the cargo-zigbuild build for glibc V (default: the Debian 12
#                 toolchain's, which needs glibc >= 2.34: JetPack 6; 2.31 is JetPack 5)
#     --from DIR  take the binaries from DIR (e.g. target/release on a Jetson)
#     --out DIR   where the tarball goes (default target/aarch64/dist)
# The tarball's name and its README say which glibc it needs.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$CROSS_ROOT"
glibc=2.34 from="" out="$CROSS_ROOT/target/aarch64/dist"
while [ $# -gt 0 ]; do
  case "$1" in
    --glibc) glibc=$2; from="${from:-$CROSS_ROOT/target/aarch64-gnu$2/$CROSS_TARGET/release}"; shift 2 ;;
    --from) from=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "cross/package.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
from="${from:-$CROSS_OUT}"
for f in edgert libedgert.so libedgert.a; do
  [ -f "$from/$f" ] || { echo "cross/package.sh: $from/$f missing: run cross/build.sh first" >&2; exit 1; }
done
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
name="edgert-$version-aarch64-linux-gnu-glibc$glibc"
stage="$out/$name"
rm -rf "$stage" && mkdir -p "$stage"/{bin,lib/pkgconfig,include,share/edgert/models,share/edgert/c-example}
install -m 755 "$from/edgert" "$stage/bin/"
install -m 755 "$from/libedgert.so" "$stage/lib/libedgert.so.$version"
ln -s "libedgert.so.$version" "$stage/lib/libedgert.so"
install -m 644 "$from/libedgert.a" "$stage/lib/"
install -m 644 sdk/capi/include/edgert.h "$stage/include/"
# Debug info stays in the build tree: it triples the download.
strip_tool=${STRIP:-aarch64-linux-gnu-strip}
[ "$(uname -m)" = aarch64 ] && strip_tool=${STRIP:-strip}
if command -v "$strip_tool" >/dev/null 2>&1; then
  "$strip_tool" "$stage/bin/edgert" "$stage/lib/libedgert.so.$version"
  "$strip_tool" --strip-debug "$stage/lib/libedgert.a"
else
  echo "cross/package.sh: $strip_tool not found: binaries keep their debug info" >&2
fi
cp models/*.onnx models/README.md models/manifest.json "$stage/share/edgert/models/"
cp apps/c-example/main.c "$stage/share/edgert/c-example/"
# Relocatable: ${pcfiledir} is where this file lies, wherever the tarball is unpacked.
cat > "$stage/lib/pkgconfig/edgert.pc" <<PC
prefix=\${pcfiledir}/../..
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: edgert
Description: edgert edge inference runtime (C ABI)
Version: $version
Libs: -L\${libdir} -ledgert
Libs.private: -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
Cflags: -I\${includedir}
PC
cat > "$stage/README.txt" <<TXT
edgert $version for aarch64 Linux (NVIDIA Jetson), needs glibc >= $glibc
($( [ "$glibc" = 2.31 ] && echo "JetPack 5 and 6" || echo "JetPack 6 (glibc 2.35); for JetPack 5 use the glibc2.31 tarball" )).

bin/edgert                 CLI: edgert build / run / inspect
lib/libedgert.so, .a       C ABI; include/edgert.h documents every call
lib/pkgconfig/edgert.pc    PKG_CONFIG_PATH=\$PWD/lib/pkgconfig pkg-config --cflags --libs edgert
share/edgert/models        ONNX models with provenance (README.md)
share/edgert/c-example     main.c: cc main.c \$(pkg-config --cflags --libs edgert) -lm -Wl,-rpath,\$PWD/lib

Try: bin/edgert inspect share/edgert/models/blazeface_short.onnx
TXT
tar -C "$out" -czf "$out/$name.tar.gz" "$name"
echo "packaged $out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1))"
