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
# Stages beyond `cargo test` (cross-builds, kernel compile checks, end-to-end apps): one
# script per component in tests/stages/, run in name order; each prints its own summary.
for f in tests/stages/*.sh; do
  [ -e "$f" ] || continue
  [ "$status" -ne 0 ] && break
  echo "== stage: $f"
  bash "$f" 2>&1 | tee -a target/test-output.txt
  [ "${PIPESTATUS[0]}" -ne 0 ] && { echo "FAIL stage $f"; status=1; }
done
echo "summary:"
grep -E '^(conformance:|goldens:|fuzz:|FAIL|pending|stage )|allocations in' target/test-output.txt || true
exit "$status"
