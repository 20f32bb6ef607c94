#!/usr/bin/env python3
"""What epilogue fusion gains: `edgert bench` with fusion on and with `EDGERT_FUSION=off`
(Convs still run on the fast kernels, but residual Adds and activations are separate nodes),
alternating, `--rounds` times; prints the medians and the ratio per model.

    .venv/bin/python tests/bench/fusion_gain.py models/blazeface_short.onnx --threads 1
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EDGERT = os.path.join(ROOT, "target", "release", "edgert")


def bench(model, threads, seconds, fusion):
    env = dict(os.environ)
    if not fusion:
        env["EDGERT_FUSION"] = "off"
    out = subprocess.run(
        [EDGERT, "bench", model, "--threads", str(threads), "--duration", str(seconds), "--json"],
        env=env, check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1.0)
    args = ap.parse_args()
    if not os.path.exists(EDGERT):
        sys.exit("build it first: cargo build --release -p edgert")
    print("| model | threads | fused median ms | unfused median ms | unfused/fused |")
    print("|---|---|---|---|---|")
    for model in args.models:
        fused, unfused = [], []
        for _ in range(args.rounds):
            for fusion, acc in ((True, fused), (False, unfused)):
                r = bench(model, args.threads, args.seconds, fusion)
                acc.append(r["latency_ms"]["median"])
        f, u = statistics.median(fused), statistics.median(unfused)
        print(f"| {os.path.basename(model)} | {args.threads} | {f:.3f} | {u:.3f} | {u / f:.2f} |")


if __name__ == "__main__":
    main()
