#!/usr/bin/env python3
"""Compare each tflite2onnx-converted model with the TFLite interpreter on seeded input.

Optional check of the conversion itself (fetch.py checks bytes, not meaning). Needs PyPI
ai-edge-litert 2.3.0 (LiteRT) in addition to models/requirements.txt; run after fetch.py:

    pip install ai-edge-litert==2.3.0 && python3 models/verify_tflite.py

TFLite takes NHWC, the converted graphs NCHW: the same seeded NHWC tensor is transposed.
Outputs are compared element-wise after flattening (hand_recrop's output is [1,1,1,4] in
TFLite and [1,4,1,1] in ONNX: same order once flattened).
"""

import os
import sys

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch  # noqa: E402


def main():
    from ai_edge_litert.interpreter import Interpreter
    worst = 0.0
    for spec in fetch.SPECS:
        if spec["convert"] != "tflite2onnx":
            continue
        it = Interpreter(model_content=fetch.extract(*spec["package"], spec["member"]))
        it.allocate_tensors()
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(os.path.join(fetch.ROOT, spec["file"]), so,
                                    providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(0)
        feeds = {}
        for d, oi in zip(it.get_input_details(), sess.get_inputs()):
            x = rng.uniform(-1, 1, d["shape"]).astype(np.float32)
            it.set_tensor(d["index"], x)
            feeds[oi.name] = np.transpose(x, (0, 3, 1, 2))
        it.invoke()
        ref = {d["name"]: it.get_tensor(d["index"]) for d in it.get_output_details()}
        got = sess.run(None, feeds)
        for o, g in zip(sess.get_outputs(), got):
            r = ref[o.name]
            diff = float(np.max(np.abs(r.reshape(-1) - g.reshape(-1))))
            rel = diff / max(float(np.max(np.abs(r))), 1e-12)
            worst = max(worst, rel)
            print(f"{spec['id']:20s} {o.name:32s} max|diff| {diff:.3g}  relative to max|ref| {rel:.2g}")
    print(f"worst relative difference {worst:.2g}")
    return 0 if worst < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
