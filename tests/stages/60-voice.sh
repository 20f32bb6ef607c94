#!/usr/bin/env bash
# Voice actions (issue 6): the derived models committed under models/kws/ are what their
# scripts make from the shipped ones, and still match them under onnxruntime:
# split_embedding.py (streaming front end + conv body of speech_embedding.onnx) and
# vad_conv2d.py (Silero VAD with Conv2d). Needs the .venv (onnx, onnxruntime, numpy).
set -uo pipefail
cd "$(dirname "$0")/../.."
t0=$(date +%s)
for s in split_embedding vad_conv2d; do
  if ! .venv/bin/python "models/kws/$s.py" --check; then
    echo "stage voice: FAIL (models/kws/$s.py --check: rerun it and commit its output)"
    exit 1
  fi
done
echo "stage voice: ok (derived keyword-spotting models reproduce; $(($(date +%s) - t0)) s)"
