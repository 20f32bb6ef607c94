#!/usr/bin/env bash
# edgert-cuda's compile check (tests/stages/40-cuda.sh) needs NVRTC, the CUDA headers
# (cuda_fp16.h is not built into NVRTC) and ptxas. No GPU and no CUDA toolkit are needed:
# the three CUDA 12.6 wheels from PyPI go into the repo's .venv. CUDA 12.6, not 13: the
# CUDA 13 wheels dropped sm_72 (Xavier). Idempotent: installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x .venv/bin/python ] || python3 -m venv .venv
wheels=(nvidia-cuda-nvrtc-cu12==12.6.85 nvidia-cuda-runtime-cu12==12.6.77 nvidia-cuda-nvcc-cu12==12.6.85)
# One metadata query for all three (pip show per wheel costs ~2 s each).
have=$(.venv/bin/python - "${wheels[@]}" <<'PY'
import sys
from importlib.metadata import version, PackageNotFoundError
for w in sys.argv[1:]:
    name, want = w.split("==")
    try:
        ok = version(name) == want
    except PackageNotFoundError:
        ok = False
    if not ok:
        print(w)
PY
)
missing=()
for w in $have; do missing+=("$w"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.d/cuda: installing ${missing[*]}"
  .venv/bin/python -m pip install -q --disable-pip-version-check "${missing[@]}"
fi
