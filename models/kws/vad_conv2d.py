#!/usr/bin/env python3
"""Rewrites Silero VAD's 1-D convolutions as 2-D ones (same weights, same results).

`models/silero_vad_openvino_16k.onnx` (Silero VAD 6.2.3, MIT; static [1, 576] input, no If)
has six Conv1d nodes. edgert's fast conv kernel handles 2-D convolutions; 1-D ones ran at
~0.2 GMAC/s, which made the VAD (2.6 ms per 32 ms chunk) cost more than the keyword
embedding it is meant to gate. This script reshapes each Conv1d weight [O, I, K] to
[O, I, 1, K], wraps the Conv in Unsqueeze(axis 2) / Squeeze(axis 2), and maps the attributes
(kernel [1, K], strides [1, s], pads [0, p0, 0, p1], dilations [1, d]). Then it checks the
rewritten model against the original with onnxruntime over 40 chunks of audio, carrying the
LSTM state (fails above 1e-5).

Writes models/kws/silero_vad_16k_conv2d.onnx. `--check` regenerates into a temporary folder
and compares with the committed file.
Usage: .venv/bin/python models/kws/vad_conv2d.py [--check]
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "silero_vad_openvino_16k.onnx")
OUT = "silero_vad_16k_conv2d.onnx"


def rewrite(model):
    consts = {n.output[0]: n for n in model.graph.node if n.op_type == "Constant"}
    nodes = []
    extra = []
    for n in model.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        if n.op_type != "Conv" or len(attrs.get("kernel_shape", [])) != 1:
            nodes.append(n)
            continue
        wnode = consts[n.input[1]]
        w = numpy_helper.to_array(wnode.attribute[0].t)
        assert w.ndim == 3, n.name
        wnode.attribute[0].t.CopyFrom(numpy_helper.from_array(w[:, :, None, :], wnode.attribute[0].t.name))
        x4, y4 = n.input[0] + "__2d", n.output[0] + "__2d"
        axes = n.name + "__axis2"
        extra.append(numpy_helper.from_array(np.array([2], np.int64), axes))
        nodes.append(helper.make_node("Unsqueeze", [n.input[0], axes], [x4], name=n.name + "__unsqueeze"))
        p = attrs.get("pads", [0, 0])
        nodes.append(helper.make_node(
            "Conv", [x4] + list(n.input[1:]), [y4], name=n.name,
            kernel_shape=[1, attrs["kernel_shape"][0]], strides=[1, attrs.get("strides", [1])[0]],
            pads=[0, p[0], 0, p[1]], dilations=[1, attrs.get("dilations", [1])[0]], group=attrs.get("group", 1)))
        nodes.append(helper.make_node("Squeeze", [y4, axes], [n.output[0]], name=n.name + "__squeeze"))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    model.graph.initializer.extend(extra)
    model.producer_name = "edgert models/kws/vad_conv2d.py"
    model.doc_string = "Silero VAD 6.2.3 (MIT), openvino_16k variant, Conv1d rewritten as Conv2d (same weights)."
    onnx.checker.check_model(model)
    return model


def verify(path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    a = ort.InferenceSession(SRC, so, providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    t = np.arange(576 * 40) / 16000
    x = (0.3 * np.sin(2 * np.pi * 220 * t * (1 + t)) * (t > 0.4) + 0.02 * rng.standard_normal(len(t))).astype(np.float32)
    sa = sb = np.zeros((2, 1, 128), np.float32)
    err = 0.0
    for k in range(40):
        chunk = x[k * 576:(k + 1) * 576][None]
        pa, sa = a.run(None, {"input": chunk, "state": sa})
        pb, sb = b.run(None, {"input": chunk, "state": sb})
        err = max(err, float(np.max(np.abs(pa - pb))), float(np.max(np.abs(sa - sb))))
    print(f"conv2d rewrite vs original over 40 chunks: max abs difference {err:.2e}")
    if err > 1e-5:
        sys.exit("rewritten VAD disagrees with the original")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    out = os.path.join(tempfile.mkdtemp() if args.check else HERE, OUT)
    onnx.save(rewrite(onnx.load(SRC)), out)
    verify(out)
    if args.check:
        if onnx.load(out).SerializeToString() != onnx.load(os.path.join(HERE, OUT)).SerializeToString():
            sys.exit(f"models/kws/{OUT} differs from what vad_conv2d.py makes: rerun it")
        print(f"models/kws/{OUT} is up to date")
    else:
        print("wrote", out)


if __name__ == "__main__":
    sys.exit(main())
