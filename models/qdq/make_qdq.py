#!/usr/bin/env python3
"""Builds a small conv net, quantizes it with onnxruntime's quantizer, and writes a golden.

The net (seeded random weights, opset 13): input [2, 3, 16, 16] -> Conv 3->8 3x3 pad 1 ->
Relu -> Conv 8->16 3x3 stride 2 pad 1 -> Relu -> GlobalAveragePool -> Flatten -> Gemm 16->10.
`onnxruntime.quantization.quantize_static` makes the QDQ model as issue 4 asks (QDQ format,
per-channel, uint8 activations, int8 weights, min-max calibration on 8 seeded N(0,1)
batches). The golden is onnxruntime's output on a further seeded input, twice: with graph
optimizations off (the QDQ graph computed literally: dequantize, float op, quantize) and
with all optimizations (onnxruntime's fused int8 kernels).

Writes (next to this script): small_convnet_fp32.onnx, small_convnet_qdq.onnx, and
golden/{input_0.npy, output_0.npy, output_0_ort_fused.npy, case.json}; case.json records
the output's quantization step (the scale of the last DequantizeLinear).
Usage: make_qdq.py   (onnx, onnxruntime and numpy as pinned in tests/requirements.txt)
"""
import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPE = [2, 3, 16, 16]


def build_fp32(path):
    rng = np.random.default_rng(0)

    def init(name, shape, fan_in):
        return numpy_helper.from_array((rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32), name)

    inits = [
        init("w1", [8, 3, 3, 3], 27),
        numpy_helper.from_array((0.1 * rng.standard_normal(8)).astype(np.float32), "b1"),
        init("w2", [16, 8, 3, 3], 72),
        numpy_helper.from_array((0.1 * rng.standard_normal(16)).astype(np.float32), "b2"),
        init("wf", [10, 16], 16),
        numpy_helper.from_array((0.1 * rng.standard_normal(10)).astype(np.float32), "bf"),
    ]
    nodes = [
        helper.make_node("Conv", ["input", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "wf", "bf"], ["logits"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "small_convnet",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [SHAPE[0], 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="edgert make_qdq.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


class Reader(CalibrationDataReader):
    """8 batches of N(0,1) input, seed 1."""

    def __init__(self):
        rng = np.random.default_rng(1)
        self.batches = iter([{"input": rng.standard_normal(SHAPE).astype(np.float32)} for _ in range(8)])

    def get_next(self):
        return next(self.batches, None)


def run(path, x, level):
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.intra_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]


def main():
    fp32 = os.path.join(HERE, "small_convnet_fp32.onnx")
    qdq = os.path.join(HERE, "small_convnet_qdq.onnx")
    build_fp32(fp32)
    quantize_static(
        fp32,
        qdq,
        Reader(),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
    )
    model = onnx.load(qdq)
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    last = [n for n in model.graph.node if n.output[0] == "logits"][0]
    assert last.op_type == "DequantizeLinear", last.op_type
    step = float(inits[last.input[1]])
    ops = sorted({n.op_type for n in model.graph.node})

    x = np.random.default_rng(2).standard_normal(SHAPE).astype(np.float32)
    literal = run(qdq, x, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    fused = run(qdq, x, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    fp = run(fp32, x, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    out = os.path.join(HERE, "golden")
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, "input_0.npy"), x)
    np.save(os.path.join(out, "output_0.npy"), literal)
    np.save(os.path.join(out, "output_0_ort_fused.npy"), fused)
    case = {
        "model": "models/qdq/small_convnet_qdq.onnx",
        "source": "N(0,1) input [2,3,16,16], seed 2; calibration: 8 N(0,1) batches, seed 1, min-max",
        "oracle": f"onnxruntime {ort.__version__}: output_0 optimizations off, output_0_ort_fused all optimizations",
        "output_step": step,
        "qdq_ops": ops,
        "max_steps_fused_vs_literal": float(np.max(np.abs(fused - literal)) / step),
        "max_abs_qdq_vs_fp32": float(np.max(np.abs(literal - fp))),
    }
    with open(os.path.join(out, "case.json"), "w") as f:
        json.dump(case, f, indent=2)
        f.write("\n")
    print(json.dumps(case, indent=2))


if __name__ == "__main__":
    main()
