#!/usr/bin/env bash
# Runs edgert's tests for aarch64 under qemu-user: edgert-core's unit tests (ops, the
# planner, the batcher and the CPU kernels' differential tests, whose NEON paths run here)
# and edgert-capi's C ABI tests. The heavy integration suites (ONNX conformance, model
# goldens) are left to the native run: under qemu they would take most of the CI budget.
#
#   cross/test.sh [-- EXTRA_TEST_ARGS...]     e.g. cross/test.sh -- batcher
#
# Release profile (shares its dependencies with cross/build.sh's build).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$CROSS_ROOT"
[ "${1:-}" = "--" ] && shift
cross_check_tools || exit 1
"$CARGO" test "${CROSS_ARGS[@]}" --release -p edgert-core --lib "$@"
"$CARGO" test "${CROSS_ARGS[@]}" --release -p edgert-capi --test abi "$@"
