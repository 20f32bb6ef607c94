#!/usr/bin/env python3
"""Side-by-side latency of edgert and onnxruntime on the same models, inputs and machine.

For each configuration (model, threads, batch) it writes one random input set, then
alternates blocks of timed runs: onnxruntime (same thread count, all graph optimizations),
then `edgert bench --json` on the same .npy inputs, `--rounds` times. It reports the median
latency of each over all rounds and the ratio edgert / onnxruntime (below 1: edgert faster).

    .venv/bin/python tests/bench/vs_onnxruntime.py               # all configurations
    .venv/bin/python tests/bench/vs_onnxruntime.py --only blazeface --rounds 5
    .venv/bin/python tests/bench/vs_onnxruntime.py --write-results  # also tests/bench/RESULTS.md

Needs `cargo build --release -p edgert` (run by this script unless --no-build).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

ROOT = Path(__file__).resolve().parents[2]
EDGERT = ROOT / "target" / "release" / "edgert"

# (label, model path relative to the repo, threads, batch)
CONFIGS = [
    ("blazeface_short", "models/blazeface_short.onnx", 1, 1),
    ("blazeface_full", "models/blazeface_full.onnx", 1, 1),
    ("silero_vad_16k_sequence", "models/silero_vad_16k_sequence.onnx", 1, 1),
    ("iris_landmark (untuned)", "models/untuned/iris_landmark.onnx", 1, 1),
    ("hand_landmark_lite (untuned)", "models/untuned/hand_landmark_lite.onnx", 1, 1),
    # The keyword spotter's streaming halves (issue 6): one 80 ms step each.
    ("kws frontend", "models/kws/speech_embedding_frontend.onnx", 1, 1),
    ("kws embedding body", "models/kws/speech_embedding_body.onnx", 1, 1),
    ("resnet50", "models/generated/resnet50.onnx", 2, 1),
    ("resnet50", "models/generated/resnet50.onnx", 2, 8),
    # Not committed (licence), used when a user supplies them: see models/README.md.
    ("oww melspectrogram", "models/comparison/melspectrogram.onnx", 1, 1),
    ("oww embedding", "models/comparison/embedding_model.onnx", 1, 1),
]

NP_TYPES = {1: np.float32, 7: np.int64, 6: np.int32, 10: np.float16}


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def make_inputs(model_path, batch, rng):
    m = onnx.load(str(model_path), load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    out = {}
    for i, vi in enumerate(x for x in m.graph.input if x.name not in inits):
        tt = vi.type.tensor_type
        dims = []
        for k, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(d.dim_value)
            else:
                dims.append(batch if k == 0 else 1)
        dt = NP_TYPES.get(tt.elem_type)
        if dt is None:
            raise SystemExit(f"{model_path}: input {vi.name} has element type {tt.elem_type}")
        if np.issubdtype(dt, np.floating):
            out[vi.name] = rng.uniform(-1, 1, size=dims).astype(dt)
        else:
            out[vi.name] = np.zeros(dims, dtype=dt)
    return out


def ort_block(sess, feeds, iters):
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def edgert_block(model_path, files, threads, iters, warmup):
    cmd = [str(EDGERT), "bench", str(model_path), "--threads", str(threads), "--json",
           "--iterations", str(iters), "--warmup", str(warmup)]
    for name, f in files.items():
        cmd += ["--input", f"{name}={f}"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip() or out.stdout.strip())
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5, help="alternating blocks per engine")
    ap.add_argument("--seconds", type=float, default=1.0, help="target time per block")
    ap.add_argument("--only", help="run configurations whose label contains this")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--write-results", action="store_true", help="write tests/bench/RESULTS.md")
    args = ap.parse_args()

    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "edgert"], cwd=ROOT, check=True)
    rng = np.random.default_rng(1234)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, rel, threads, batch in CONFIGS:
            if args.only and args.only not in label:
                continue
            path = ROOT / rel
            if not path.exists():
                print(f"skipped: {label}: {rel} is not here", file=sys.stderr)
                continue
            feeds = make_inputs(path, batch, rng)
            files = {}
            for i, (name, arr) in enumerate(feeds.items()):
                f = Path(tmp) / f"{label.split()[0]}_{batch}_{i}.npy"
                np.save(f, arr)
                files[name] = f
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
            warm = ort_block(sess, feeds, 5)
            per_iter = max(statistics.median(warm), 0.05)
            iters = max(5, min(2000, int(args.seconds * 1e3 / per_iter)))
            ort_ms, ert_ms = [], []
            ert = None
            try:
                for _ in range(args.rounds):
                    ort_ms.append(statistics.median(ort_block(sess, feeds, iters)))
                    ert = edgert_block(path, files, threads, iters, warmup=5)
                    ert_ms.append(ert["latency_ms"]["median"])
            except RuntimeError as e:
                print(f"FAIL {label}: edgert: {e}", file=sys.stderr)
                rows.append((label, threads, batch, statistics.median(ort_ms) if ort_ms else float("nan"), None, None))
                continue
            o, e = statistics.median(ort_ms), statistics.median(ert_ms)
            rows.append((label, threads, batch, o, e, e / o))
            print(f"{label:<30} threads {threads} batch {batch}: ort {o:9.3f} ms  edgert {e:9.3f} ms  "
                  f"ratio {e / o:5.2f}  (isa {ert['isa']}, {iters} runs x {args.rounds} rounds)", flush=True)

    table = ["| model | threads | batch | onnxruntime median ms | edgert median ms | ratio (edgert/ort) |",
             "|---|---|---|---|---|---|"]
    for label, threads, batch, o, e, r in rows:
        if e is None:
            table.append(f"| {label} | {threads} | {batch} | {o:.3f} | failed | - |")
        else:
            table.append(f"| {label} | {threads} | {batch} | {o:.3f} | {e:.3f} | {r:.2f} |")
    print("\n".join(table))
    if args.write_results:
        head = [
            "# edgert vs onnxruntime (CPU, FP32)",
            "",
            f"Written by `tests/bench/vs_onnxruntime.py --write-results` on {time.strftime('%Y-%m-%d')}.",
            f"CPU: {cpu_model()}, {os.cpu_count()} logical cores; onnxruntime {ort.__version__}; "
            f"{args.rounds} alternating rounds of ~{args.seconds:g} s per engine; medians of per-run latency.",
            "Ratio below 1 means edgert is faster. Machines are noisy: compare ratios, rerun before concluding.",
            "",
        ]
        # Keep the sections after this one (other benchmarks' results, written by hand).
        path = ROOT / "tests/bench/RESULTS.md"
        old = path.read_text() if path.exists() else ""
        later = old.find("\n# ", 1)
        tail = "\n" + old[later + 1:] if later >= 0 else ""
        path.write_text("\n".join(head + table) + "\n" + tail)
        print("wrote tests/bench/RESULTS.md")


if __name__ == "__main__":
    main()
