#!/usr/bin/env bash
# edgert-cuda's compile check (tests/stages/40-cuda.sh) needs NVRTC, the CUDA headers
# (cuda_fp16.h is not built into NVRTC) and ptxas. No GPU and no CUDA toolkit are needed:
# the three CUDA 12.6 wheels from PyPI go into the repo's .venv. CUDA 12.6, not 13: the
# CUDA 13 wheels dropped sm_72 (Xavier). Idempotent: installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x .venv/bin/python ] || python3 -m venv .venv
wheels=(nvidia-cuda-nvrtc-cu12==12.6.85 nvidia-cuda-runtime-cu12==12.6.77 nvidia-cuda-nvcc-cu12==12.6.85)
missing=()
for w in "${wheels[@]}"; do
  name=${w%%==*}
  want=${w##*==}
  have=$(.venv/bin/python -m pip show "$name" 2>/dev/null | awk '/^Version:/{print $2}' || true)
  [ "$have" = "$want" ] || missing+=("$w")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.d/cuda: installing ${missing[*]}"
  .venv/bin/python -m pip install -q --disable-pip-version-check "${missing[@]}"
fi
