#!/usr/bin/env python3
"""Calibration tensors for an INT8 (or `best`) build of the speech embedding's conv body.

Writes `--n` windows of log-mel frames, `log_mel` [1, 76, 32] `.npy` files, as the streaming
detector feeds `speech_embedding_body.onnx`: utterances of the keywords and of the negative
phrases spoken by the TRAINING voices only (train.py's lists; the held-out voices of the
eval set stay unseen), augmented as in training, streamed through
`speech_embedding_frontend.onnx` in 1,520-sample chunks every 1,280 samples.

    .venv/bin/python models/kws/make_calib_mels.py --out /tmp/kws_calib --n 300
    target/release/edgert build models/kws/speech_embedding_body.onnx -o /tmp/body_int8.edgert \\
        --precision int8 --calib /tmp/kws_calib --int8-all
    target/release/voice-actions eval DIR --body /tmp/body_int8.edgert
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import (ACCENTS_TRAIN, KEYWORDS, NEGATIVES, ROOT, VARIANTS_TRAIN, augment, place,  # noqa: E402
                   synth, voices)

HOP, CHUNK, STEP_FRAMES, WINDOW = 1280, 1520, 8, 76


def mel_frames(front, audio):
    """The front end's log-mel frames over `audio`, chunk by chunk as the detector streams."""
    out = []
    for start in range(0, len(audio) - CHUNK + 1, HOP):
        chunk = audio[start: start + CHUNK][None, :].astype(np.float32)
        out.append(front.run(None, {"samples": chunk})[0][0])
    return np.concatenate(out)  # [frames, 32]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=300, help="windows to write")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    os.makedirs(args.out, exist_ok=True)
    front = ort.InferenceSession(os.path.join(ROOT, "models", "kws", "speech_embedding_frontend.onnx"))
    vlist = voices(ACCENTS_TRAIN, VARIANTS_TRAIN)
    phrases = KEYWORDS + NEGATIVES
    written = 0
    with tempfile.TemporaryDirectory() as tmp:
        while written < args.n:
            text = phrases[rng.integers(len(phrases))]
            u = synth(text, vlist[rng.integers(len(vlist))], int(rng.integers(120, 200)), int(rng.integers(25, 75)), tmp)
            frames = mel_frames(front, augment(place(u, rng), rng))
            # Windows ending on a chunk boundary, as the detector's steps see them.
            for end in rng.choice(np.arange(WINDOW, len(frames) + 1, STEP_FRAMES), size=2, replace=False):
                np.save(os.path.join(args.out, f"mel_{written:04d}.npy"), frames[end - WINDOW: end][None].astype(np.float32))
                written += 1
    print(f"wrote {written} log-mel windows [1, {WINDOW}, 32] to {args.out}")


if __name__ == "__main__":
    main()
