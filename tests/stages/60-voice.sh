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
# The training script still runs end to end (synthesis, streaming embeddings, training,
# threshold choice, export) on a tiny set; it writes into a temporary folder only.
quick=$(mktemp -d)
if ! .venv/bin/python models/kws/train.py --quick --out "$quick" > "$quick/log" 2>&1 \
    || ! [ -s "$quick/heads.json" ] || ! [ -s "$quick/hey_edge.onnx" ]; then
  tail -20 "$quick/log"
  echo "stage voice: FAIL (models/kws/train.py --quick)"
  exit 1
fi
rm -rf "$quick"
echo "stage voice: ok (derived keyword-spotting models reproduce, train.py --quick runs; $(($(date +%s) - t0)) s)"
