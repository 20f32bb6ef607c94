#!/usr/bin/env bash
# The CUDA backend's checks that need a GPU, in one script, for any machine with an NVIDIA
# GPU and driver (Jetson Xavier/Orin, H100/H200, ...). Prints one table at the end; exits
# non-zero on any failure.
#
#   bash tests/gpu/run.sh                      builds here with cargo, then runs everything
#   SKIP_SETUP=1 bash tests/gpu/run.sh         reuse .venv and the wheels
#   EDGERT_GPU_QUICK=1 ...                     only the edgert-cuda tests, the ResNet-50 FP16
#                                              check and the ResNet-50 b64 benches (a lease
#                                              with little time left)
#   EDGERT_GPU_BUNDLE=.gpu bash tests/gpu/run.sh
#                                              no cargo on the GPU machine: run binaries
#                                              built elsewhere by tests/gpu/bundle.sh, with
#                                              the machine's own python3 (numpy; torch for
#                                              the ResNet-50 benchmark model)
#
# 1. builds (release) edgert and edgert-cuda (or takes them from the bundle);
# 2. runs the edgert-cuda tests: host-side units, every kernel reachable from the executor
#    against edgert-core's reference ops on random inputs with remainder sizes and batch > 1
#    (gpu_ops), and the preprocessing / WMMA / dp4a kernels against host references
#    (gpu_kernels);
# 3. runs the model goldens (tests/goldens/*/case.json) with `edgert run --device cuda` and
#    compares each output with onnxruntime's (f32 tolerance of DESIGN.md);
# 4. builds FP16 engines of BlazeFace and ResNet-50 and compares their CUDA outputs (convs on
#    tensor cores) with the same engines on the CPU and with FP32;
# 5. benchmarks with `edgert bench --device cuda` (H2D, GPU compute, D2H, end to end):
#    BlazeFace b1 and b32 (rebatched by `edgert build --batch 32`) in FP32/FP16, the KWS models,
#    and ResNet-50 FP32/FP16 b1/b8/b64 (a random-weight torchvision export when models/ has
#    none, made here when torch is installed), with PyTorch eager on the same GPU as a
#    reference where torch is installed.
set -uo pipefail
cd "$(dirname "$0")/../.."
t0=$(date +%s)
results=()
fail=0
note() { results+=("$1"); echo "== $1"; }
quick=${EDGERT_GPU_QUICK:-}
# Quick mode runs only the ResNet-50 b64 benches and none of the per-node profiles.
profile() { [ -z "$quick" ] || return 0; echo "== profile: $1 (slowest 12 nodes)"; shift; timeout 120 $B bench "$@" --device cuda --duration 1 --profile 2>&1 | grep -A12 '^profile'; }

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "skipped: no GPU (nvidia-smi finds none)"
  exit 0
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)
echo "GPU: $gpu"
mkdir -p target
export EDGERT_KERNEL_CACHE="${EDGERT_KERNEL_CACHE:-$PWD/target/kernel-cache}"

# NVRTC and the CUDA headers: the machine's own first (a driver can't JIT PTX from a newer
# NVRTC than itself), else the PyPI wheels that tests/setup.sh installs.
nvrtc_dir=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/*/lib /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu; do
  if compgen -G "$d/libnvrtc.so*" >/dev/null; then nvrtc_dir=$d; break; fi
done
if [ -n "$nvrtc_dir" ]; then
  # cudarc looks for libnvrtc.so, .so.12, .so.11 ...: give a CUDA 13 NVRTC the plain name.
  if [ ! -e "$nvrtc_dir/libnvrtc.so" ] && ! compgen -G "$nvrtc_dir/libnvrtc.so.1[12]" >/dev/null; then
    mkdir -p target/nvrtc-link
    ln -sf "$(ls "$nvrtc_dir"/libnvrtc.so.* | head -1)" target/nvrtc-link/libnvrtc.so
    export LD_LIBRARY_PATH="$PWD/target/nvrtc-link:${LD_LIBRARY_PATH:-}"
  fi
  export LD_LIBRARY_PATH="$nvrtc_dir:${LD_LIBRARY_PATH:-}"
  [ -e /usr/local/cuda/include/cuda_fp16.h ] && export EDGERT_CUDA_INCLUDE=/usr/local/cuda/include
fi

if [ -n "${EDGERT_GPU_BUNDLE:-}" ]; then
  PY=python3
  B=$EDGERT_GPU_BUNDLE/edgert
  [ -x "$B" ] || { echo "no $B: run tests/gpu/bundle.sh first"; exit 1; }
  note "build: prebuilt bundle $EDGERT_GPU_BUNDLE"
else
  [ "${SKIP_SETUP:-}" = 1 ] || bash tests/setup.sh >/dev/null || { echo "setup failed"; exit 1; }
  PY=.venv/bin/python
  $PY models/fetch.py --check >/dev/null 2>&1 || echo "note: models/fetch.py --check failed (ResNet-50 goldens will be skipped)"
  if [ -z "$nvrtc_dir" ]; then
    sp=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/nvidia
    export LD_LIBRARY_PATH="$sp/cuda_nvrtc/lib:${LD_LIBRARY_PATH:-}"
    export EDGERT_CUDA_INCLUDE="$sp/cuda_runtime/include:$sp/cuda_nvcc/include"
  fi
  if cargo build --release --locked -p edgert 2>&1 | tail -3; then
    note "build: ok"
  else
    note "build: FAIL"; fail=1
  fi
  B=target/release/edgert
fi
echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}  EDGERT_CUDA_INCLUDE=${EDGERT_CUDA_INCLUDE:-}"

# 2. The edgert-cuda tests.
check_tests() { # label, log
  if grep -q 'test result: FAILED\|error: test failed\|panicked' "$2"; then
    note "$1: FAIL (see $2)"; fail=1
  else
    note "$1: ok ($(grep -cE '(^|\.\.\. )ok [A-Za-z]' "$2") GPU cases; $(grep -c 'skipped: no GPU' "$2") skipped; $(grep -oE '[0-9]+ passed' "$2" | awk '{s+=$1} END {print s}') tests passed)"
  fi
}
if [ -n "${EDGERT_GPU_BUNDLE:-}" ]; then
  for t in "$EDGERT_GPU_BUNDLE"/test_*; do
    log=target/gpu-$(basename "$t").txt
    (cd sdk/cuda && timeout 240 "../../$t" --nocapture --test-threads=1) > "$log" 2>&1 || echo "exit status $?: error: test failed" >> "$log"
    grep -E '^(ok |skipped|FAIL|test .*FAILED|thread .*panicked)' "$log" | head -60
    check_tests "$(basename "$t")" "$log"
  done
else
  log=target/gpu-ops.txt
  cargo test --release --locked -p edgert-cuda -- --nocapture --test-threads=1 > "$log" 2>&1 || echo "error: test failed" >> "$log"
  grep -E '^(ok |skipped|FAIL|test .*FAILED|thread .*panicked)' "$log" | head -60
  check_tests "edgert-cuda tests" "$log"
fi

# 3. Goldens on CUDA.
for case in tests/goldens/*/case.json; do
  [ -z "$quick" ] || { note "goldens: skipped (quick mode)"; break; }
  dir=$(dirname "$case")
  name=$(basename "$dir")
  args=$($PY - "$case" <<'PY'
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
  if ! log=$(timeout 90 $B run ${args} --device cuda --output-dir "$out" 2>&1); then
    note "golden $name: FAIL ($(echo "$log" | grep -m1 -i 'error' | cut -c1-300))"; fail=1; continue
  fi
  cmp=$($PY - "$case" "$out" <<'PY'
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
  cpu=$(echo "$log" | grep -c 'runs on the CPU')
  note "golden $name: $cmp; $cpu node(s) on the CPU"
  [[ $cmp == ok* ]] || fail=1
done

# 4. FP16 engines (`edgert build --precision fp16`: f16 conv weights) on CUDA, where their
# convolutions run on tensor cores with activations rounded to f16: outputs against the same
# engine on the CPU (f32 activations) and against FP32 on the CPU, as max err / output range.
mkdir -p target/fp16
fp16_check() { # label, model, run args...
  local label=$1 model=$2; shift 2
  local e=target/fp16/$label.edgert d=target/fp16/$label
  rm -rf "$d"
  if ! log=$(timeout 120 $B build "$model" -o "$e" --precision fp16 2>&1); then
    note "fp16 $label: FAIL (build: $(echo "$log" | grep -m1 -i error | cut -c1-200))"; fail=1; return
  fi
  for dev in cpu cuda; do
    if ! log=$(timeout 120 $B run "$e" "$@" --device $dev --output-dir "$d/$dev" 2>&1); then
      note "fp16 $label: FAIL (run on $dev: $(echo "$log" | grep -m1 -i error | cut -c1-200))"; fail=1; return
    fi
  done
  timeout 120 $B run "$model" "$@" --output-dir "$d/fp32" >/dev/null 2>&1
  local vs_cpu vs_fp32
  vs_cpu=$($PY tests/gpu/compare_outputs.py "$d/cuda" "$d/cpu" 2e-2) || fail=1
  vs_fp32=$($PY tests/gpu/compare_outputs.py "$d/cuda" "$d/fp32" 1)
  note "fp16 $label on cuda: vs the CPU's fp16 engine $vs_cpu; vs fp32 on the CPU ${vs_fp32#ok }"
}
for name in blazeface_short blazeface_full; do
  [ -z "$quick" ] || break
  case=tests/goldens/$name/case.json
  [ -f "$case" ] || continue
  args=$($PY - "$case" <<'PY'
import json, sys, os
c = json.load(open(sys.argv[1])); d = os.path.dirname(sys.argv[1])
print(c["model"], " ".join(f"--input={i['name']}={d}/{i['file']}" for i in c["inputs"]))
PY
)
  # shellcheck disable=SC2086
  fp16_check "$name" $args
done

# 5. Benchmarks.
resnet=""
for f in models/generated/resnet50*.onnx models/resnet50*.onnx; do [ -f "$f" ] && { resnet=$f; break; }; done
if [ -z "$resnet" ] && $PY -c 'import torch, torchvision' 2>/dev/null; then
  resnet=target/resnet50_random.onnx
  $PY - "$resnet" <<'PY' || resnet=""
import sys, torch, torchvision
m = torchvision.models.resnet50(weights=None).eval()  # random weights: for timing only
x = torch.randn(1, 3, 224, 224)
kw = dict(input_names=["data"], output_names=["logits"], dynamic_axes={"data": {0: "N"}}, opset_version=17)
try:
    torch.onnx.export(m, x, sys.argv[1], dynamo=False, **kw)
except TypeError:
    torch.onnx.export(m, x, sys.argv[1], **kw)
PY
fi
if [ -n "$resnet" ]; then
  $PY -c 'import numpy as np; np.save("target/fp16/resnet_input.npy", np.random.default_rng(7).standard_normal((1, 3, 224, 224)).astype(np.float32))'
  rin=$($PY -c 'import onnx, sys; print(onnx.load(sys.argv[1]).graph.input[0].name)' "$resnet" 2>/dev/null || echo data)
  fp16_check resnet50 "$resnet" "--input=$rin=target/fp16/resnet_input.npy"
fi
bench() { # label, model, extra args...
  local label=$1 model=$2; shift 2
  [ -z "$quick" ] || [[ $label == resnet50*b64* ]] || return 0
  [ -f "$model" ] || { note "bench $label: skipped (no $model)"; return; }
  local j
  if j=$(timeout 120 $B bench "$model" --device cuda --warmup 10 --duration 3 --json "$@" 2>target/bench-err.txt); then
    note "bench $label: $(echo "$j" | $PY tests/gpu/bench_summary.py)"
  else
    note "bench $label: FAIL ($(grep -m1 -i error target/bench-err.txt | cut -c1-300))"; fail=1
  fi
}
bench "blazeface_short b1" models/blazeface_short.onnx --batch 1
bench "blazeface_full b1" models/blazeface_full.onnx --batch 1
bench "blazeface_short fp16 b1" target/fp16/blazeface_short.edgert --batch 1
bench "blazeface_full fp16 b1" target/fp16/blazeface_full.edgert --batch 1
bench "blazeface_short fp16 b1, no tensor cores" target/fp16/blazeface_short.edgert --batch 1 --no-tensor-cores
# The issue's BlazeFace batch-32 target: the shipped model rebatched (`edgert build --batch`).
if [ -z "$quick" ] && timeout 120 $B build models/blazeface_short.onnx -o target/blazeface_short_b32.edgert --batch 32 >/dev/null 2>&1 &&
  timeout 120 $B build models/blazeface_short.onnx -o target/fp16/blazeface_short_b32.edgert --batch 32 --precision fp16 >/dev/null 2>&1; then
  bench "blazeface_short b32" target/blazeface_short_b32.edgert
  bench "blazeface_short fp16 b32" target/fp16/blazeface_short_b32.edgert
fi
profile "blazeface_short fp16 b1" target/fp16/blazeface_short.edgert
profile "blazeface_short b1" models/blazeface_short.onnx
bench "speech_embedding_body b1" models/kws/speech_embedding_body.onnx --batch 1
bench "silero_vad_16k_conv2d" models/kws/silero_vad_16k_conv2d.onnx
if [ -n "$resnet" ]; then
  for b in 1 8 64; do bench "resnet50 fp32 b$b" "$resnet" --batch $b; done
  profile "resnet50 fp32 b64" "$resnet" --batch 64
  if [ -f target/fp16/resnet50.edgert ]; then
    for b in 1 8 64; do bench "resnet50 fp16 b$b" target/fp16/resnet50.edgert --batch $b; done
    bench "resnet50 fp16 b64, no tensor cores" target/fp16/resnet50.edgert --batch 64 --no-tensor-cores
    bench "resnet50 fp16 b64, 128 tiles" target/fp16/resnet50.edgert --batch 64 --tc-tile 128
    bench "resnet50 fp16 b1, 128 tiles" target/fp16/resnet50.edgert --batch 1 --tc-tile 128
    profile "resnet50 fp16 b64" target/fp16/resnet50.edgert --batch 64
  fi
  if [ -z "$quick" ] && $PY -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    ref=$($PY - <<'PY'
import time, torch, torchvision
torch.backends.cudnn.benchmark = True
m = torchvision.models.resnet50(weights=None).eval().cuda()
out = []
for dt, name in ((torch.float32, "fp32"), (torch.float16, "fp16")):
    mm = m.to(dt)
    for b in (1, 64):
        x = torch.randn(b, 3, 224, 224, device="cuda", dtype=dt)
        with torch.inference_mode():
            for _ in range(10): mm(x)
            torch.cuda.synchronize(); ts = []
            for _ in range(30):
                t = time.perf_counter(); mm(x); torch.cuda.synchronize(); ts.append(time.perf_counter() - t)
        ts.sort(); med = ts[len(ts) // 2]
        out.append(f"{name} b{b} {b / med:.0f} img/s ({med * 1e3:.2f} ms)")
print("; ".join(out))
PY
)
    note "reference: PyTorch $($PY -c 'import torch; print(torch.__version__)') eager (cuDNN) resnet50, on-GPU input: $ref"
  fi
else
  note "bench resnet50: skipped (no ResNet-50 model and no torch to make one)"
fi
note "not measured: INT8 on CUDA (quantized nodes would fall back to the CPU), preprocessing-kernel bandwidth"

echo
echo "GPU: $gpu"
printf '%s\n' "${results[@]}"
echo "gpu checks: $([ $fail -eq 0 ] && echo ok || echo FAIL) in $(( $(date +%s) - t0 ))s"
exit $fail
