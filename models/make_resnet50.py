#!/usr/bin/env python3
"""ResNet-50 with torchvision's architecture (v1.5: stride on the bottleneck's 3x3 conv),
built with onnx.helper (no torch), opset 17, input `input` [N,3,224,224], output `logits`
[N,1000]. Conv + BatchNormalization (eval) + Relu + Add, as torch's exporter emits them
without BN folding. Weights are seeded random (He init; BN parameters near identity but not
equal to it, so BN matters): fine for speed and for checking against onnxruntime, useless
for classifying anything. Deterministic: same numpy version and seed, same bytes.

Usage: make_resnet50.py OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 50


def build():
    rng = np.random.default_rng(SEED)
    nodes, inits = [], []
    counter = [0]

    def name(prefix):
        counter[0] += 1
        return f"{prefix}_{counter[0]}"

    def conv_bn(x, cin, cout, k, stride, relu=True):
        w = name("conv_w")
        std = np.sqrt(2.0 / (cin * k * k))
        inits.append(numpy_helper.from_array((rng.standard_normal((cout, cin, k, k)) * std).astype(np.float32), w))
        c = name("conv")
        nodes.append(
            helper.make_node("Conv", [x, w], [c], name=c, kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4)
        )
        params = []
        for what, val in (
            ("scale", 1.0 + 0.1 * rng.standard_normal(cout)),
            ("bias", 0.1 * rng.standard_normal(cout)),
            ("mean", 0.1 * rng.standard_normal(cout)),
            ("var", 1.0 + 0.1 * np.abs(rng.standard_normal(cout))),
        ):
            p = name(f"bn_{what}")
            inits.append(numpy_helper.from_array(val.astype(np.float32), p))
            params.append(p)
        b = name("bn")
        nodes.append(helper.make_node("BatchNormalization", [c] + params, [b], name=b, epsilon=1e-5))
        if not relu:
            return b
        r = name("relu")
        nodes.append(helper.make_node("Relu", [b], [r], name=r))
        return r

    x = conv_bn("input", 3, 64, 7, 2)
    p = name("maxpool")
    nodes.append(helper.make_node("MaxPool", [x], [p], name=p, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    x, cin = p, 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            s = stride if i == 0 else 1
            cout = width * 4
            y = conv_bn(x, cin, width, 1, 1)
            y = conv_bn(y, width, width, 3, s)
            y = conv_bn(y, width, cout, 1, 1, relu=False)
            short = conv_bn(x, cin, cout, 1, s, relu=False) if (s != 1 or cin != cout) else x
            a = name("add")
            nodes.append(helper.make_node("Add", [y, short], [a], name=a))
            r = name("relu")
            nodes.append(helper.make_node("Relu", [a], [r], name=r))
            x, cin = r, cout
    g = name("gap")
    nodes.append(helper.make_node("GlobalAveragePool", [x], [g], name=g))
    f = name("flatten")
    nodes.append(helper.make_node("Flatten", [g], [f], name=f, axis=1))
    inits.append(numpy_helper.from_array((rng.standard_normal((1000, 2048)) * np.sqrt(1.0 / 2048)).astype(np.float32), "fc_w"))
    inits.append(numpy_helper.from_array((0.01 * rng.standard_normal(1000)).astype(np.float32), "fc_b"))
    nodes.append(helper.make_node("Gemm", [f, "fc_w", "fc_b"], ["logits"], name="fc", transB=1))
    graph = helper.make_graph(
        nodes,
        "resnet50",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 1000])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="edgert make_resnet50.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def write(path):
    with open(path, "wb") as f:
        f.write(build().SerializeToString())


if __name__ == "__main__":
    write(sys.argv[1])
