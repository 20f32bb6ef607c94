#!/usr/bin/env bash
# The demo: set-up, release build, then facedetect (BlazeFace short range, anchors, weighted
# NMS) on the bundled clip models/video/faces.mp4 (a real face photo moving across a frame,
# then a face-free second). Writes one JSON line per frame and annotated snapshots.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/setup.sh
cargo build --release --locked -p facedetect
out=target/demo
rm -rf "$out/snapshots"
mkdir -p "$out"
./target/release/facedetect file://models/video/faces.mp4 \
  --snapshots "$out/snapshots" --snapshot-every 10 \
  --output "$out/faces.jsonl" --summary-json "$out/summary.json" --status
frames=$(wc -l < "$out/faces.jsonl")
with_faces=$(grep -c '"box"' "$out/faces.jsonl" || true)
echo "demo: $frames frames processed, $with_faces with a face (the clip has faces in frames 0-44, none in 45-59)"
echo "demo: JSON lines in $out/faces.jsonl, e.g.:"
head -1 "$out/faces.jsonl"
echo "demo: annotated snapshots:"
ls "$out/snapshots"
