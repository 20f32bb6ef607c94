#!/usr/bin/env bash
# The demo: set-up, release build, then BlazeFace (short range) on the bundled astronaut
# photo, printing the strongest raw face scores. (The multi-stream face detection app with
# anchor decoding and NMS replaces this when `apps/facedetect` lands.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/setup.sh
cargo build --release --locked -p edgert
input=tests/goldens/blazeface_short/input_0.npy   # astronaut.png, 128x128, RGB in [-1,1], NCHW
out=target/demo
./target/release/edgert inspect models/blazeface_short.onnx
./target/release/edgert run models/blazeface_short.onnx --input "input=$input" --output-dir "$out" --summary --top 5
echo "outputs written to $out/ (scores are raw logits per anchor; sigmoid > 0.5 means a face)"
