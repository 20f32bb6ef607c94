"""Compares the `.npy` outputs of two `edgert run --output-dir` folders, for tests/gpu/run.sh.

Usage: compare_outputs.py GOT_DIR WANT_DIR MAX_ERR
Prints `ok|FAIL max err/scale E` where E is max |got - want| / max(1, max |want|) over all
outputs (each output scaled by its own range); FAIL (exit 1) when E > MAX_ERR or a file of
WANT_DIR is missing from GOT_DIR or differs in shape.
"""
import os
import sys

import numpy as np

got_dir, want_dir, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
worst, problems = 0.0, []
for f in sorted(os.listdir(want_dir)):
    if not f.endswith(".npy"):
        continue
    want = np.load(os.path.join(want_dir, f)).astype(np.float64)
    path = os.path.join(got_dir, f)
    if not os.path.exists(path):
        problems.append(f"no {f}")
        continue
    got = np.load(path).astype(np.float64)
    if got.shape != want.shape:
        problems.append(f"{f}: shape {got.shape} != {want.shape}")
        continue
    scale = max(1.0, float(np.abs(want).max()) if want.size else 1.0)
    if want.size:
        worst = max(worst, float(np.abs(got - want).max()) / scale)
ok = not problems and worst <= limit
print(("ok" if ok else "FAIL") + f" max err/scale {worst:.2e}" + (f" ({'; '.join(problems)})" if problems else ""))
sys.exit(0 if ok else 1)
