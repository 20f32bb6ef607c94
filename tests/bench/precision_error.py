#!/usr/bin/env python3
"""Output error and speed of FP16, INT8 and `best` engines against FP32, per image model.

For each model: calibration images (random crops of the bundled photos, as int8_accuracy.py
makes them) are converted to the model's input; `edgert build` makes an FP32, an FP16, an
INT8 (`--int8-all`: every convolution, to measure INT8's error, not the speed choice) and a
`best` engine; each runs on held-out test images (other crops, other seed) with `edgert run`;
the error of an output is `max |y - y_fp32| / max |y_fp32|` (the metric `best` budgets), the
worst over outputs and test images. Then `edgert bench` times the four engines, alternating,
and the table gives median latency relative to FP32.

Usage: tests/bench/precision_error.py [--models blazeface_short,...] [--threads N] [--rounds R]
Needs target/release/edgert and the .venv (numpy, Pillow); resnet50 needs
models/generated/resnet50.onnx (models/make_resnet50.py).
"""

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from int8_accuracy import crops

ROOT = Path(__file__).resolve().parents[2]
EDGERT = ROOT / "target/release/edgert"

# model file, input name, size, mean, std (per 0..255 pixel), batch
MODELS = {
    "blazeface_short": ("models/blazeface_short.onnx", "input", 128, 127.5, 127.5),
    "blazeface_full": ("models/blazeface_full.onnx", "input", 192, 127.5, 127.5),
    "resnet50": ("models/generated/resnet50.onnx", "input", 224, 127.5, 64.0),
}


def run(cmd) -> str:
    return subprocess.run([str(c) for c in cmd], check=True, stdout=subprocess.PIPE, text=True).stdout


def outputs(engine: Path, input_name: str, x: Path, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    run([EDGERT, "run", engine, "--input", f"{input_name}={x}", "--output-dir", out])
    return {p.stem: np.load(p).astype(np.float32) for p in sorted(out.glob("*.npy"))}


def bench_ms(engine: Path, threads: int) -> float:
    rep = json.loads(run([EDGERT, "bench", engine, "--threads", threads, "--iterations", 20, "--warmup", 3, "--json"]))
    return rep["latency_ms"]["median"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="blazeface_short,blazeface_full,resnet50")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5, help="alternating bench rounds")
    ap.add_argument("--max-error", default="0.02", help="budget of the best engine")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="edgert-precision-"))
    print(f"threads {args.threads}; error = max|y - y_fp32| / max|y_fp32| over outputs and 8 test images; "
          f"time = median of {args.rounds} alternating rounds relative to FP32")
    print("| model | fp16 error | int8 error | best error (layers int8/fp16/fp32) | fp16 time | int8 time | best time |")
    print("|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        onnx, input_name, size, mean, std = MODELS[name]
        onnx = ROOT / onnx
        if not onnx.exists():
            print(f"| {name} | missing {onnx} | | | | | |")
            continue
        d = work / name
        calib = d / "calib"
        calib.mkdir(parents=True)
        for i, im in enumerate(crops(32, 7, size, flips=False)):
            im.save(calib / f"{i:03d}.png")
        tests = []
        for i, im in enumerate(crops(8, 99, size, flips=False)):
            x = ((np.asarray(im, dtype=np.float32) - mean) / std).transpose(2, 0, 1)[None]
            p = d / f"test{i}.npy"
            np.save(p, np.ascontiguousarray(x))
            tests.append(p)
        calib_args = ["--calib", calib, "--calib-mean", str(mean), "--calib-std", str(std),
                      "--calib-cache", d / "scales.calib", "--threads", args.threads]
        shape = ["--shape", f"{input_name}=1x3x{size}x{size}"]
        engines = {p: d / f"{p}.edgert" for p in ("fp32", "fp16", "int8", "best")}
        run([EDGERT, "build", onnx, "-o", engines["fp32"], *shape])
        run([EDGERT, "build", onnx, "-o", engines["fp16"], "--precision", "fp16", *shape])
        run([EDGERT, "build", onnx, "-o", engines["int8"], "--precision", "int8", "--int8-all", *calib_args, *shape])
        best_log = run([EDGERT, "build", onnx, "-o", engines["best"], "--precision", "best",
                        "--max-error", args.max_error, *calib_args, *shape])
        layers = next((l for l in best_log.splitlines() if l.startswith("precision:")), "")
        found = dict(re.findall(r"(int8|fp16|fp32) (\d+)", layers))
        counts = "/".join(found.get(p, "?") for p in ("int8", "fp16", "fp32"))
        err = {}
        for p in ("fp16", "int8", "best"):
            worst = 0.0
            for i, x in enumerate(tests):
                want = outputs(engines["fp32"], input_name, x, d / f"o_fp32_{i}")
                got = outputs(engines[p], input_name, x, d / f"o_{p}_{i}")
                for k, w in want.items():
                    rng = float(np.abs(w).max())
                    diff = float(np.abs(got[k] - w).max())
                    worst = max(worst, diff / rng if rng > 0 else diff)
            err[p] = worst
        times = {p: [] for p in engines}
        for _ in range(args.rounds):
            for p, e in engines.items():
                times[p].append(bench_ms(e, args.threads))
        med = {p: statistics.median(v) for p, v in times.items()}
        rel = {p: med[p] / med["fp32"] for p in med}
        print(f"| {name} | {err['fp16']:.2e} | {err['int8']:.2e} | {err['best']:.2e} ({counts}) | "
              f"{rel['fp16']:.2f} | {rel['int8']:.2f} | {rel['best']:.2f} |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
