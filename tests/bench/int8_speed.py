#!/usr/bin/env python3
"""INT8 speed against FP32 and against onnxruntime's INT8, in one run (issue 4's target:
ResNet-50 INT8, 2 threads, batch 8 >= 1.8x edgert's own FP32 throughput and >= 1.0x
onnxruntime INT8).

Builds, from the same calibration images (crops of the bundled photos, as
precision_error.py makes them): an edgert FP32 engine, an edgert INT8 engine with every
convolution quantized (`--int8-all`), an edgert INT8 engine with the build's timed choice
(the default), and onnxruntime's FP32 session and its INT8 model (`quantize_static`: QDQ,
per-channel int8 weights, uint8 activations, min-max). Then times all five, alternating, on
the same batch and threads: `edgert bench --json` (median latency) and onnxruntime's
`session.run` (median over about `--seconds`). Prints per-engine medians over the rounds,
throughput relative to edgert FP32, and edgert INT8 relative to onnxruntime INT8.

Usage: tests/bench/int8_speed.py [--model resnet50] [--threads 2] [--batch 8] [--rounds 5]
Needs target/release/edgert and the .venv (numpy, Pillow, onnxruntime).
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort
from int8_accuracy import crops
from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
from ort_int8 import Reader, median_ms as ort_ms
from precision_error import MODELS

ROOT = Path(__file__).resolve().parents[2]
EDGERT = ROOT / "target/release/edgert"


def run(cmd) -> str:
    return subprocess.run([str(c) for c in cmd], check=True, stdout=subprocess.PIPE, text=True).stdout


def edgert_ms(engine: Path, shape: list, threads: int, iterations: int) -> float:
    rep = json.loads(run([EDGERT, "bench", engine, *shape, "--threads", threads, "--iterations", iterations,
                          "--warmup", 2, "--json"]))
    return rep["latency_ms"]["median"]


def cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                flags = open("/proc/cpuinfo").read()
                extra = [f for f in ("avx512f", "avx512_vnni", "avx_vnni") if f" {f}" in flags]
                return f"{line.split(':', 1)[1].strip()} ({', '.join(extra) or 'no AVX-512/VNNI'})"
    except OSError:
        pass
    return platform.processor()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="resnet50", choices=sorted(MODELS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=5, help="edgert bench iterations per round")
    ap.add_argument("--seconds", type=float, default=3.0, help="onnxruntime time per round")
    ap.add_argument("--calib-images", type=int, default=16)
    args = ap.parse_args()
    onnx_path, input_name, size, mean, std = MODELS[args.model]
    onnx_path = ROOT / onnx_path
    if not onnx_path.exists():
        print(f"missing {onnx_path}", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="edgert-int8-speed-"))
    calib = work / "calib"
    calib.mkdir()
    arrays = []
    for i, im in enumerate(crops(args.calib_images, 7, size, flips=False)):
        im.save(calib / f"{i:03d}.png")
        arrays.append(((np.asarray(im, dtype=np.float32) - mean) / std).transpose(2, 0, 1)[None].copy())

    shape = ["--shape", f"{input_name}={args.batch}x3x{size}x{size}"]
    calib_args = ["--calib", calib, "--calib-mean", str(mean), "--calib-std", str(std), "--threads", args.threads]
    engines = {
        "edgert fp32": work / "fp32.edgert",
        "edgert int8 (every conv)": work / "int8_all.edgert",
        "edgert int8 (timed choice)": work / "int8.edgert",
    }
    run([EDGERT, "build", onnx_path, "-o", engines["edgert fp32"], *shape])
    run([EDGERT, "build", onnx_path, "-o", engines["edgert int8 (every conv)"], "--precision", "int8",
         "--int8-all", *calib_args, *shape])
    log = run([EDGERT, "build", onnx_path, "-o", engines["edgert int8 (timed choice)"], "--precision", "int8",
               *calib_args, *shape])
    kept = next((l.strip() for l in log.splitlines() if l.startswith("precision:")), "")

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = 1
    q_path = work / "model_qdq.onnx"
    quantize_static(str(onnx_path), str(q_path), Reader(input_name, arrays), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    sessions = {
        "onnxruntime fp32": ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"]),
        "onnxruntime int8 (QDQ)": ort.InferenceSession(str(q_path), opts, providers=["CPUExecutionProvider"]),
    }
    x = np.random.default_rng(0).uniform(-1, 1, [args.batch, 3, size, size]).astype(np.float32)
    feed = {input_name: x}

    times = {k: [] for k in [*engines, *sessions]}
    for _ in range(args.rounds):
        for name, path in engines.items():
            times[name].append(edgert_ms(path, shape, args.threads, args.iterations))
        for name, sess in sessions.items():
            times[name].append(ort_ms(sess, feed, args.seconds))
    med = {k: statistics.median(v) for k, v in times.items()}

    print(f"{args.model}, batch {args.batch}, {args.threads} threads, {args.rounds} alternating rounds; "
          f"CPU: {cpu_name()}; onnxruntime {ort.__version__}; edgert int8 timed choice: {kept or '?'}")
    print("| engine | median ms | rounds ms | throughput vs edgert fp32 |")
    print("|---|---|---|---|")
    base = med["edgert fp32"]
    for k, v in med.items():
        rounds = ", ".join(f"{t:.1f}" for t in times[k])
        print(f"| {k} | {v:.1f} | {rounds} | {base / v:.2f}x |")
    ort_q = med["onnxruntime int8 (QDQ)"]
    for k in ("edgert int8 (every conv)", "edgert int8 (timed choice)"):
        print(f"{k}: {base / med[k]:.2f}x edgert fp32 throughput (target 1.8x), "
              f"{ort_q / med[k]:.2f}x onnxruntime int8 throughput (target 1.0x)")
    print(f"onnxruntime int8 / its fp32 throughput: {med['onnxruntime fp32'] / ort_q:.2f}x")
    if os.environ.get("KEEP") != "1":
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
