#!/usr/bin/env bash
# The test command: set-up, test data, then every test of the workspace.
#   bash tests/run.sh            all tests
#   bash tests/run.sh -- FILTER  pass arguments through to `cargo test`
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/setup.sh
py=.venv/bin/python

# Models: verify the committed ones, generate the ones too large to commit (ResNet-50).
$py models/fetch.py --check
# ONNX node tests from the pinned onnx wheel (generated, not committed: ~56 MB).
$py tests/conformance/gen_node_tests.py >/dev/null

shift_args=()
[ "${1:-}" = "--" ] && shift && shift_args=("$@")
mkdir -p target
set +o pipefail
cargo test --workspace --locked "${shift_args[@]}" -- --nocapture 2>&1 | tee target/test-output.txt
status=${PIPESTATUS[0]}
echo "summary:"
grep -E '^(conformance:|goldens:|fuzz:|FAIL|pending)|allocations in' target/test-output.txt || true
exit "$status"
