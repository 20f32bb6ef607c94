#!/usr/bin/env python3
"""onnxruntime's own INT8 speed on a model, next to its FP32, for issue 4's comparison:
quantizes the model with `quantize_static` (QDQ, per-channel, uint8 activations, int8
weights, min-max on the given calibration images) and times onnxruntime FP32 and INT8,
alternating, on the same input and threads. Prints medians and the INT8/FP32 ratio.

Usage: ort_int8.py MODEL.onnx CALIB_DIR [--threads 2] [--batch 1] [--rounds 3] [--mean M,M,M --std S,S,S]
"""
import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import onnxruntime as ort
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
from PIL import Image


def images(calib_dir, size, mean, std, limit=8):
    files = sorted(f for f in os.listdir(calib_dir) if f.lower().endswith((".png", ".jpg", ".jpeg")))[:limit]
    for f in files:
        im = Image.open(os.path.join(calib_dir, f)).convert("RGB").resize((size[1], size[0]), Image.BILINEAR)
        x = (np.asarray(im, dtype=np.float32) - mean) / std
        yield x.transpose(2, 0, 1)[None]


class Reader(CalibrationDataReader):
    def __init__(self, name, arrays):
        self.it = iter([{name: a} for a in arrays])

    def get_next(self):
        return next(self.it, None)


def median_ms(sess, feed, seconds):
    for _ in range(3):
        sess.run(None, feed)
    times = []
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end or len(times) < 5:
        t0 = time.perf_counter()
        sess.run(None, feed)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("calib")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--mean", default="123.675,116.28,103.53")
    ap.add_argument("--std", default="58.395,57.12,57.375")
    a = ap.parse_args()
    mean = np.array([float(v) for v in a.mean.split(",")], dtype=np.float32)
    std = np.array([float(v) for v in a.std.split(",")], dtype=np.float32)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = a.threads
    opts.inter_op_num_threads = 1
    fp32 = ort.InferenceSession(a.model, opts, providers=["CPUExecutionProvider"])
    inp = fp32.get_inputs()[0]
    size = [d if isinstance(d, int) else 224 for d in inp.shape[2:]]
    q_path = os.path.join(tempfile.mkdtemp(), "model_qdq.onnx")
    quantize_static(
        a.model, q_path, Reader(inp.name, list(images(a.calib, size, mean, std))),
        quant_format=QuantFormat.QDQ, per_channel=True,
        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
    )
    int8 = ort.InferenceSession(q_path, opts, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).uniform(-1, 1, [a.batch, 3, *size]).astype(np.float32)
    feed = {inp.name: x}
    f, q = [], []
    for _ in range(a.rounds):
        f.append(median_ms(fp32, feed, a.seconds))
        q.append(median_ms(int8, feed, a.seconds))
    fm, qm = statistics.median(f), statistics.median(q)
    print(f"onnxruntime {ort.__version__}, {a.threads} threads, batch {a.batch}: "
          f"fp32 {fm:.2f} ms, int8 (QDQ per-channel) {qm:.2f} ms, int8/fp32 {qm / fm:.3f} "
          f"(rounds fp32 {[round(v, 2) for v in f]}, int8 {[round(v, 2) for v in q]})")


if __name__ == "__main__":
    main()
