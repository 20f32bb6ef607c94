#!/usr/bin/env python3
"""Writes the real-model goldens: fixed inputs and onnxruntime's outputs for each model.

onnxruntime (pinned in tests/requirements.txt) is used only as the test oracle, with graph
optimizations off. Layout: tests/goldens/<case>/input_<i>.npy, output_<i>.npy (i = position
in the model's input/output list) and case.json. Run models/fetch.py first (ResNet-50 is
generated there). Usage: gen_goldens.py [CASE ...]
"""
import json
import os
import sys

import numpy as np
import onnxruntime as ort
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def face_image(size, name="astronaut", unit=False):
    """An image from models/images as MediaPipe's models want it: RGB, resized to the model
    input, scaled to [-1, 1] (or [0, 1] with `unit`), NCHW."""
    img = Image.open(os.path.join(ROOT, f"models/images/{name}.png")).convert("RGB")
    img = img.resize((size, size), Image.BILINEAR)
    x = np.asarray(img, dtype=np.float32)
    x = x / 255.0 if unit else x / 127.5 - 1.0
    return x.transpose(2, 0, 1)[None].copy()


def audio(n, seed):
    """Deterministic synthetic audio in [-1, 1]: two tones with a chirp and noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / 16000.0
    x = 0.3 * np.sin(2 * np.pi * 440 * t) + 0.2 * np.sin(2 * np.pi * (300 + 900 * t) * t)
    x += 0.05 * rng.standard_normal(n)
    return np.clip(x, -1, 1).astype(np.float32)


def cases():
    yield "blazeface_short", "models/blazeface_short.onnx", {"input": face_image(128)}, "astronaut.png 128x128 RGB [-1,1] NCHW"
    yield "blazeface_full", "models/blazeface_full.onnx", {"input": face_image(192)}, "astronaut.png 192x192 RGB [-1,1] NCHW"
    # A profile face (camera.png, CC0) and a face-free photo (coffee.png).
    yield "blazeface_short_camera", "models/blazeface_short.onnx", {"input": face_image(128, "camera")}, "camera.png 128x128"
    yield "blazeface_full_coffee", "models/blazeface_full.onnx", {"input": face_image(192, "coffee")}, "coffee.png 192x192 (no face)"
    # Models nobody tuned edgert for (MediaPipe, converted the same way).
    yield "untuned_hand_landmark_lite", "models/untuned/hand_landmark_lite.onnx", {"input_1": face_image(224, unit=True)}, "astronaut.png 224x224 RGB [0,1]"
    yield "untuned_hand_recrop", "models/untuned/hand_recrop.onnx", {"input_1": face_image(256, "coffee")}, "coffee.png 256x256 RGB [-1,1]"
    yield "untuned_iris_landmark", "models/untuned/iris_landmark.onnx", {"input_1": face_image(64, unit=True)}, "astronaut.png 64x64 RGB [0,1]"
    chunks = audio(8 * 576, 1).reshape(8, 576)
    zeros = np.zeros((1, 1, 128), np.float32)
    yield (
        "silero_vad_16k_sequence",
        "models/silero_vad_16k_sequence.onnx",
        {"input": chunks, "h": zeros, "c": zeros},
        "8 chunks of 576 samples of synthetic audio (seed 1), zero state",
    )
    # The Silero VAD variants that use If (and the If-free OpenVINO one): one 576-sample
    # chunk (512 new + 64 context) at 16 kHz with a non-zero state.
    chunk = audio(576, 5)[None]
    state = (0.1 * np.random.default_rng(6).standard_normal((2, 1, 128))).astype(np.float32)
    sr = np.array(16000, np.int64)
    for variant, feeds in [
        ("silero_vad", {"input": chunk, "state": state, "sr": sr}),
        ("silero_vad_16k_op15", {"input": chunk, "state": state, "sr": sr}),
        ("silero_vad_half", {"input": chunk, "state": state}),
        ("silero_vad_op18_ifless", {"input": chunk, "sr": sr, "state": state}),
        ("silero_vad_openvino_16k", {"input": chunk, "state": state}),
    ]:
        yield variant, f"models/{variant}.onnx", feeds, "one 576-sample chunk of synthetic audio (seed 5), state N(0,0.1) (seed 6), 16 kHz"
    n = 12400 + 1280 * 12
    yield (
        "speech_embedding",
        "models/speech_embedding.onnx",
        {"samples:0": audio(n, 2)[None]},
        f"{n} samples of synthetic audio (seed 2): T = 13 embeddings",
    )
    rng = np.random.default_rng(3)
    yield "resnet50_b1", "models/generated/resnet50.onnx", {"input": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}, "N(0,1) input, seed 3"
    rng = np.random.default_rng(4)
    yield "resnet50_b2", "models/generated/resnet50.onnx", {"input": rng.standard_normal((2, 3, 224, 224)).astype(np.float32)}, "N(0,1) input batch 2, seed 4"


def main():
    only = set(sys.argv[1:])
    for name, model, feeds, source in cases():
        if only and name not in only:
            continue
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(os.path.join(ROOT, model), opts, providers=["CPUExecutionProvider"])
        outs = sess.run(None, feeds)
        d = os.path.join(HERE, name)
        os.makedirs(d, exist_ok=True)
        case = {"model": model, "source": source, "oracle": f"onnxruntime {ort.__version__}, optimizations off", "inputs": [], "outputs": []}
        for i, inp in enumerate(sess.get_inputs()):
            arr = feeds[inp.name]
            np.save(os.path.join(d, f"input_{i}.npy"), arr)
            case["inputs"].append({"name": inp.name, "file": f"input_{i}.npy", "dtype": str(arr.dtype), "shape": list(arr.shape)})
        for i, (o, arr) in enumerate(zip(sess.get_outputs(), outs)):
            np.save(os.path.join(d, f"output_{i}.npy"), arr)
            case["outputs"].append({"name": o.name, "file": f"output_{i}.npy", "dtype": str(arr.dtype), "shape": list(arr.shape)})
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump(case, f, indent=2)
            f.write("\n")
        print(f"{name}: " + ", ".join(f"{o['name']} {o['shape']}" for o in case["outputs"]))


if __name__ == "__main__":
    main()
