#!/usr/bin/env bash
# Builds the C example with a C compiler against libedgert, twice: linked with the static
# library (c-example-static) and with the shared one (c-example-shared, rpath to LIBDIR).
#
#   apps/c-example/build.sh CC LIBDIR OUTDIR
#   e.g. apps/c-example/build.sh cc target/release target/c-example
#        apps/c-example/build.sh aarch64-linux-gnu-gcc target/aarch64/aarch64-unknown-linux-gnu/release target/aarch64/c-example
set -euo pipefail
cd "$(dirname "$0")/../.."
cc=$1 libdir=$2 out=$3
mkdir -p "$out"
flags=(-std=c11 -D_POSIX_C_SOURCE=200809L -O2 -Wall -Wextra -Werror -I sdk/capi/include)
# What a Rust staticlib needs from the system on linux-gnu (`--print native-static-libs`).
static_libs=(-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc)
"$cc" "${flags[@]}" apps/c-example/main.c "$libdir/libedgert.a" "${static_libs[@]}" -o "$out/c-example-static"
"$cc" "${flags[@]}" apps/c-example/main.c -L "$libdir" -ledgert -lm -Wl,-rpath,"$(cd "$libdir" && pwd)" \
  -o "$out/c-example-shared"
echo "built $out/c-example-static $out/c-example-shared"
