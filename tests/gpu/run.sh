#!/usr/bin/env bash
# The CUDA backend's checks that need a GPU, in one script, for any machine with an NVIDIA
# GPU and driver (Jetson Xavier/Orin, H100/H200, ...). NOT RUN YET: the machine this was
# written on has no GPU. Prints one table at the end; exits non-zero on any failure.
#
#   bash tests/gpu/run.sh            everything
#   SKIP_SETUP=1 bash tests/gpu/run.sh   reuse .venv and the wheels
#
# 1. builds (release) edgert and edgert-cuda;
# 2. runs every kernel reachable from the executor against edgert-core's reference ops on
#    random inputs with remainder sizes and batch > 1 (sdk/cuda/tests/gpu_ops.rs);
# 3. runs the model goldens (tests/goldens/*/case.json) with `edgert run --device cuda` and
#    compares each output with onnxruntime's (f32 tolerance of DESIGN.md);
# 4. times repeated runs per model (a stand-in until `edgert bench --device cuda` exists).
set -uo pipefail
cd "$(dirname "$0")/../.."
t0=$(date +%s)
results=()
fail=0
note() { results+=("$1"); echo "== $1"; }

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "skipped: no GPU (nvidia-smi finds none)"
  exit 0
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)
echo "GPU: $gpu"

[ "${SKIP_SETUP:-}" = 1 ] || bash tests/setup.sh >/dev/null || { echo "setup failed"; exit 1; }
.venv/bin/python models/fetch.py --check >/dev/null 2>&1 || echo "note: models/fetch.py --check failed (ResNet-50 goldens will be skipped)"
sp=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/nvidia
# Prefer the machine's own NVRTC (a driver can't JIT PTX from a newer NVRTC); else the wheel.
if ! ldconfig -p | grep -q 'libnvrtc.so.12' && [ ! -e /usr/local/cuda/lib64/libnvrtc.so.12 ]; then
  export LD_LIBRARY_PATH="$sp/cuda_nvrtc/lib:${LD_LIBRARY_PATH:-}"
  export EDGERT_CUDA_INCLUDE="$sp/cuda_runtime/include:$sp/cuda_nvcc/include"
else
  export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
fi
export EDGERT_KERNEL_CACHE="${EDGERT_KERNEL_CACHE:-$PWD/target/kernel-cache}"

# 1. Build.
if cargo build --release --locked -p edgert -p edgert-cuda 2>&1 | tail -3; then
  note "build: ok"
else
  note "build: FAIL"; fail=1
fi
B=target/release/edgert

# 2. Kernels against the reference.
if cargo test --release --locked -p edgert-cuda -- --nocapture 2>&1 | tee target/gpu-ops.txt | grep -E '^(ok |test |skipped)'; then
  n=$(grep -c '^ok ' target/gpu-ops.txt)
  grep -q 'test result: FAILED' target/gpu-ops.txt && { note "kernels vs reference: FAIL"; fail=1; } || note "kernels vs reference: ok ($n cases)"
else
  note "kernels vs reference: FAIL (see target/gpu-ops.txt)"; fail=1
fi

# 3. Goldens on CUDA, 4. timing.
for case in tests/goldens/*/case.json; do
  dir=$(dirname "$case")
  name=$(basename "$dir")
  args=$(.venv/bin/python - "$case" <<'PY'
import json, sys, os
c = json.load(open(sys.argv[1])); d = os.path.dirname(sys.argv[1])
print(c["model"], " ".join(f"--input={i['name']}={d}/{i['file']}" for i in c["inputs"]))
PY
)
  model=${args%% *}
  [ -f "$model" ] || { note "golden $name: skipped (no $model)"; continue; }
  out=target/gpu-goldens/$name
  rm -rf "$out"
  # shellcheck disable=SC2086
  if ! log=$($B run ${args} --device cuda --output-dir "$out" 2>&1); then
    note "golden $name: FAIL ($(echo "$log" | grep -m1 error))"; fail=1; continue
  fi
  cmp=$(.venv/bin/python - "$case" "$out" <<'PY'
import json, sys, os, re
import numpy as np
c = json.load(open(sys.argv[1])); d = os.path.dirname(sys.argv[1]); out = sys.argv[2]
worst = 0.0; ok = True
for o in c["outputs"]:
    want = np.load(os.path.join(d, o["file"])).astype(np.float64)
    got = np.load(os.path.join(out, re.sub(r"[^A-Za-z0-9_.-]", "_", o["name"]) + ".npy")).astype(np.float64)
    scale = max(1.0, float(np.abs(want).max()) if want.size else 1.0)
    err = np.abs(got - want)
    bad = (err > 1e-4 * np.abs(want)) & (err > 1e-5 * scale)
    worst = max(worst, float((err / scale).max()) if err.size else 0.0)
    ok &= not bad.any()
print(("ok" if ok else "FAIL") + f" max err/scale {worst:.2e}")
PY
)
  ms=$(echo "$log" | grep -oE 'ran in [0-9.]+ ms' | grep -oE '[0-9.]+')
  note "golden $name: $cmp; cold run ${ms} ms (includes first-launch JIT)"
  [[ $cmp == ok* ]] || fail=1
done

note "benchmarks (ResNet-50 FP16/INT8 b64, BlazeFace b32, preprocessing bandwidth): NOT IMPLEMENTED (needs edgert bench --device cuda and the FP16/INT8 executor paths)"
echo
echo "GPU: $gpu"
printf '%s\n' "${results[@]}"
echo "gpu checks: $([ $fail -eq 0 ] && echo ok || echo FAIL) in $(( $(date +%s) - t0 ))s"
exit $fail
