#!/usr/bin/env bash
# Builds what tests/gpu/run.sh runs, here, into one folder, for a GPU machine that has a
# driver but no Rust toolchain (a lent cloud GPU, a Jetson flashed without cargo):
#
#   bash tests/gpu/bundle.sh [DIR]     (default .gpu, which .gitignore ignores)
#   # copy the repository with DIR to the GPU machine, then there:
#   EDGERT_GPU_BUNDLE=DIR bash tests/gpu/run.sh
#
# The bundle holds the release `edgert` CLI and the edgert-cuda test binaries (unit tests,
# gpu_ops, gpu_kernels), stripped. Built for this machine's architecture and glibc: build on
# the oldest system the bundle must run on (Debian 12's glibc 2.36 runs on Ubuntu 22.04+).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-.gpu}
rm -rf "$dir"
mkdir -p "$dir"
cargo build --release --locked -p edgert
cp target/release/edgert "$dir/"
# The test binaries' paths come from cargo's JSON messages.
cargo test --release --locked -p edgert-cuda --no-run --message-format=json 2>/dev/null |
  python3 -c '
import json, sys, shutil
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and m.get("executable"):
        name = m["target"]["name"].replace("-", "_")
        shutil.copy(m["executable"], sys.argv[1] + "/test_" + name)
        print("bundled test binary", name)
' "$dir"
strip "$dir"/*
du -sh "$dir"
