#!/usr/bin/env python3
"""Splits Google's speech embedding into a streaming front end and a conv body.

`models/speech_embedding.onnx` computes its log-mel front end inside a `Loop` (400-sample
Hann frames every 160 samples, 512-point DFT as a MatMul, 32 mel bands, log(x + 0.001)) and
then a conv net over 76 frames per embedding. Run as shipped, every 80 ms step recomputes
all 76 frames of its 775 ms window, and that front end is ~90% of a step. This script writes:

* `speech_embedding_frontend.onnx`: `samples` [1, 1520] (the 1280 new samples after the
  240 before them) -> `log_mel` [1, 8, 32]: exactly the 8 frames the window gained. Built
  from the model's own constants (Hann window, DFT matrix, mel matrix, epsilon): framing,
  window and DFT as one strided Conv, the mel matrix as a 1x1 Conv, static shapes (no Loop).
* `speech_embedding_body.onnx`: `log_mel` [1, 76, 32] -> `embedding` [1, 1, 1, 96]: the
  model's nodes after the Loop, unchanged.

Then checks, with onnxruntime, that front end + body streamed over random audio give the
whole model's embeddings (max abs difference printed; fails above 1e-4). `--check` only
regenerates into a temporary folder and compares with the committed files' outputs.

Usage: .venv/bin/python models/kws/split_embedding.py [--check]
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SRC = os.path.join(ROOT, "models", "speech_embedding.onnx")
HOP, FRAME, STEP, NFRAMES, WINDOW = 1280, 400, 160, 8, 76
CHUNK = HOP + FRAME - STEP  # 1520


def frontend(model):
    loop = next(n for n in model.graph.node if n.op_type == "Loop")
    body = loop.attribute[0].g
    outer = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    inner = {i.name: numpy_helper.to_array(i) for i in body.initializer}
    hann = outer["map/while/stft/hann_window/sub_2:0"].astype(np.float32)
    mel = outer["map/while/linear_to_mel_weight_matrix:0"].astype(np.float32)
    eps = outer["map/while/add_1/y:0"].astype(np.float32)
    dft = inner["cst_rfft_512__100"].astype(np.float32)
    assert hann.shape == (FRAME,) and dft.shape == (2, 257, 512) and mel.shape == (257, 32)
    # Framing, Hann window and the 512-point DFT (the frame zero-padded from 400) are one
    # strided Conv: filter k is DFT row k times the window. edgert's Conv is its fast kernel
    # (its MatMul/Gemm on a constant here ran at reference speed: 2.5 ms a step).
    filt = np.concatenate([dft[0], dft[1]])[:, :FRAME] * hann[None, :]  # [514, 400]
    nodes = [
        helper.make_node("Reshape", ["samples", "in_shape"], ["x"]),  # [1,1,1,1520]
        helper.make_node("Conv", ["x", "dft_w"], ["spec4"], strides=[1, STEP]),  # [1,514,1,8]
        helper.make_node("Reshape", ["spec4", "spec_shape"], ["spec"]),  # [514,8]
        helper.make_node("Slice", ["spec", "re_start", "re_end", "axis0"], ["re"]),
        helper.make_node("Mul", ["re", "re"], ["re2"]),  # x*x: the reference Pow is slow
        helper.make_node("Slice", ["spec", "re_end", "im_end", "axis0"], ["im"]),
        helper.make_node("Mul", ["im", "im"], ["im2"]),
        helper.make_node("Add", ["re2", "im2"], ["power"]),  # [257,8]
        helper.make_node("Sqrt", ["power"], ["mag"]),
        helper.make_node("Reshape", ["mag", "mag_shape"], ["mag4"]),  # [1,257,1,8]
        helper.make_node("Conv", ["mag4", "mel_w"], ["mel4"]),  # [1,32,1,8], 1x1 conv = mel matrix
        helper.make_node("Add", ["mel4", "eps"], ["mel_eps"]),
        helper.make_node("Log", ["mel_eps"], ["logmel4"]),
        helper.make_node("Reshape", ["logmel4", "mel_shape"], ["logmel"]),  # [32,8]
        helper.make_node("Transpose", ["logmel"], ["logmel_t"], perm=[1, 0]),  # [8,32]
        helper.make_node("Unsqueeze", ["logmel_t", "axis0"], ["log_mel"]),  # [1,8,32]
    ]
    i64 = lambda v: np.array(v, np.int64)  # noqa: E731
    inits = [
        numpy_helper.from_array(i64([1, 1, 1, CHUNK]), "in_shape"),
        numpy_helper.from_array(filt.reshape(514, 1, 1, FRAME).astype(np.float32), "dft_w"),
        numpy_helper.from_array(i64([514, NFRAMES]), "spec_shape"),
        numpy_helper.from_array(i64([0]), "re_start"), numpy_helper.from_array(i64([257]), "re_end"),
        numpy_helper.from_array(i64([514]), "im_end"), numpy_helper.from_array(i64([0]), "axis0"),
        numpy_helper.from_array(i64([1, 257, 1, NFRAMES]), "mag_shape"),
        numpy_helper.from_array(np.ascontiguousarray(mel.T).reshape(32, 257, 1, 1), "mel_w"),
        numpy_helper.from_array(eps.reshape(()), "eps"),
        numpy_helper.from_array(i64([32, NFRAMES]), "mel_shape"),
    ]
    g = helper.make_graph(nodes, "speech_embedding_frontend",
                          [helper.make_tensor_value_info("samples", TensorProto.FLOAT, [1, CHUNK])],
                          [helper.make_tensor_value_info("log_mel", TensorProto.FLOAT, [1, NFRAMES, 32])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="edgert models/kws/split_embedding.py")
    m.doc_string = ("Streaming log-mel front end of Google's speech embedding (Apache-2.0): 1520 samples (1280 new "
                    "+ 240 before) -> 8 frames. Constants copied from speech_embedding.onnx.")
    onnx.checker.check_model(m)
    return m


def body(model):
    # The nodes the output needs, walking back and stopping at the Loop's squeezed output
    # (onnx.utils.Extractor needs value_info, which shape inference can't give past the Loop).
    producer = {o: n for n in model.graph.node for o in n.output}
    inits = {i.name: i for i in model.graph.initializer}
    keep, used, todo = set(), set(), [model.graph.output[0].name]
    while todo:
        t = todo.pop()
        if t == "Squeeze:0" or t in used:
            continue
        used.add(t)
        if t in producer and id(producer[t]) not in keep:
            keep.add(id(producer[t]))
            todo.extend(i for i in producer[t].input if i)
    nodes = [n for n in model.graph.node if id(n) in keep]
    g = helper.make_graph(nodes, "speech_embedding_body", [], [], [inits[t] for t in sorted(used) if t in inits])
    m = helper.make_model(g, opset_imports=model.opset_import)
    # Readable, fixed interface: log_mel [1,76,32] -> embedding [1,1,1,96].
    for n in m.graph.node:
        n.input[:] = ["log_mel" if i == "Squeeze:0" else i for i in n.input]
        n.output[:] = ["embedding" if o == model.graph.output[0].name else o for o in n.output]
    m.graph.input.append(helper.make_tensor_value_info("log_mel", TensorProto.FLOAT, [1, WINDOW, 32]))
    m.graph.output.append(helper.make_tensor_value_info("embedding", TensorProto.FLOAT, [1, 1, 1, 96]))
    m.producer_name = "edgert models/kws/split_embedding.py"
    m.doc_string = "Conv body of Google's speech embedding (Apache-2.0): 76 log-mel frames -> one 96-d embedding."
    onnx.checker.check_model(m)
    return m


def stream(front, bod, x):
    """Embeddings of x streamed in 1280-sample steps, starting from 12,400 zeros."""
    audio = np.zeros(240, np.float32)
    mel = np.zeros((WINDOW, 32), np.float32)
    # The initial window (12,400 zeros) has 76 frames of log(0.001).
    mel[:] = np.log(np.float32(0.001))
    out = []
    for k in range(len(x) // HOP):
        chunk = np.concatenate([audio, x[k * HOP:(k + 1) * HOP]])
        audio = chunk[-240:]
        new = front.run(None, {"samples": chunk[None]})[0][0]
        mel = np.concatenate([mel[NFRAMES:], new])
        out.append(bod.run(None, {"log_mel": mel[None]})[0].reshape(96))
    return np.array(out)


def verify(front_path, body_path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    whole = ort.InferenceSession(SRC, so, providers=["CPUExecutionProvider"])
    front = ort.InferenceSession(front_path, so, providers=["CPUExecutionProvider"])
    bod = ort.InferenceSession(body_path, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    k = 20
    x = (rng.standard_normal(HOP * k) * 0.2).astype(np.float32)
    x[HOP * 5:HOP * 9] *= 0.01
    want = whole.run(None, {"samples:0": np.concatenate([np.zeros(12400, np.float32), x])[None]})[0].reshape(-1, 96)[1:]
    got = stream(front, bod, x)
    err = float(np.max(np.abs(got - want)))
    print(f"streamed front end + body vs whole model over {k} steps: max abs difference {err:.2e}")
    if err > 1e-4:
        sys.exit("split models disagree with speech_embedding.onnx")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="regenerate into a temp folder and compare")
    args = ap.parse_args()
    model = onnx.load(SRC)
    out = tempfile.mkdtemp() if args.check else HERE
    fp, bp = os.path.join(out, "speech_embedding_frontend.onnx"), os.path.join(out, "speech_embedding_body.onnx")
    onnx.save(frontend(model), fp)
    onnx.save(body(model), bp)
    verify(fp, bp)
    if args.check:
        for name in ("speech_embedding_frontend.onnx", "speech_embedding_body.onnx"):
            a, b = onnx.load(os.path.join(out, name)), onnx.load(os.path.join(HERE, name))
            if a.SerializeToString() != b.SerializeToString():
                sys.exit(f"models/kws/{name} differs from what split_embedding.py makes: rerun it")
        print("committed split models are up to date")
    else:
        print("wrote", fp, "and", bp)


if __name__ == "__main__":
    sys.exit(main())
