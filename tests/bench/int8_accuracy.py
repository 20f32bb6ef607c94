#!/usr/bin/env python3
"""INT8 (or FP16, or `best`) accuracy of the BlazeFace models: calibrate on crops of the
bundled photos, build an engine with `edgert build --precision P`, run `facedetect` with
the FP32 model and that engine on the bundled face clip, and compare the detections frame by
frame (issue 4's target: boxes within IoU >= 0.9 of FP32's, scores within 0.05) and against
the clip's ground truth. The columns say "int8" for whichever precision was built.

Calibration and test data are disjoint: calibration uses random crops of
models/images/{astronaut,coffee,camera}.png; the test is models/video/faces.mp4 (the
astronaut's face moving and scaled over the coffee photo, with face-free frames).

Usage: tests/bench/int8_accuracy.py [--method minmax|entropy|percentile:P]
       [--precision int8|fp16|best] [--max-error E] [--keep DIR]
Needs target/release/{edgert,facedetect} and the .venv (Pillow).
"""

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
EDGERT = ROOT / "target/release/edgert"
FACEDETECT = ROOT / "target/release/facedetect"
CLIP = ROOT / "models/video/faces.mp4"
TRUTH = ROOT / "models/video/faces.json"


def crops(n: int, seed: int, size: int, flips: bool = True):
    """`n` random square crops of the bundled photos, resized to `size`, half of them
    mirrored when `flips` (shared with precision_error.py)."""
    rng = random.Random(seed)
    imgs = [Image.open(ROOT / f"models/images/{name}.png").convert("RGB") for name in ("astronaut", "coffee", "camera")]
    for i in range(n):
        im = imgs[i % len(imgs)]
        w, h = im.size
        s = rng.uniform(0.35, 1.0)
        cw, ch = int(w * s), int(h * s)
        x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
        crop = im.crop((x, y, x + cw, y + ch)).resize((size, size))
        if flips and rng.random() < 0.5:
            crop = crop.transpose(Image.FLIP_LEFT_RIGHT)
        yield crop


def make_calibration_images(out: Path, n: int = 32, seed: int = 7) -> None:
    for i, crop in enumerate(crops(n, seed, 256)):
        crop.save(out / f"{i:03d}.png")


def iou(a, b) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def detect(model: Path, out: Path) -> dict:
    subprocess.run(
        [str(FACEDETECT), "--model", str(model), f"file://{CLIP}", "--output", str(out)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    frames = {}
    for line in out.read_text().splitlines():
        rec = json.loads(line)
        frames[rec["frame"]] = rec["detections"]
    return frames


def compare(name: str, fp32: dict, int8: dict, truth: dict) -> dict:
    ious, score_diffs, missed, extra = [], [], 0, 0
    truth_iou = {"fp32": [], "int8": []}
    for f in sorted(fp32):
        a, b = fp32[f], int8.get(f, [])
        used = set()
        for d in a:
            best = max(((iou(d["box"], e["box"]), j) for j, e in enumerate(b) if j not in used), default=(0.0, None))
            if best[1] is None or best[0] < 0.5:
                missed += 1
                continue
            used.add(best[1])
            ious.append(best[0])
            score_diffs.append(abs(d["score"] - b[best[1]]["score"]))
        extra += len(b) - len(used)
        if f in truth:
            for label, dets in (("fp32", a), ("int8", b)):
                truth_iou[label].append(max((iou(d["box"], truth[f]) for d in dets), default=0.0))
    ious.sort()
    med = ious[len(ious) // 2] if ious else float("nan")
    res = {
        "model": name,
        "frames": len(fp32),
        "fp32 detections": sum(len(v) for v in fp32.values()),
        "int8 detections": sum(len(v) for v in int8.values()),
        "matched": len(ious),
        "missed by int8": missed,
        "extra in int8": extra,
        "IoU vs fp32 min": round(min(ious), 4) if ious else None,
        "IoU vs fp32 median": round(med, 4),
        "score diff max": round(max(score_diffs), 4) if score_diffs else None,
        "truth IoU min fp32": round(min(truth_iou["fp32"]), 4) if truth_iou["fp32"] else None,
        "truth IoU min int8": round(min(truth_iou["int8"]), 4) if truth_iou["int8"] else None,
    }
    res["target met (IoU>=0.9, score<=0.05, none missed)"] = bool(
        ious and min(ious) >= 0.9 and max(score_diffs) <= 0.05 and missed == 0 and extra == 0
    )
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--method", default="minmax", help="calibration method (minmax, entropy, percentile:P)")
    ap.add_argument("--precision", default="int8", choices=["int8", "fp16", "best"], help="precision to build")
    ap.add_argument("--max-error", default="0.02", help="error budget of --precision best")
    ap.add_argument("--keep", type=Path, help="keep engines, caches and detections in this folder")
    args = ap.parse_args()
    for exe in (EDGERT, FACEDETECT):
        if not exe.exists():
            print(f"missing {exe}: cargo build --release -p edgert -p facedetect", file=sys.stderr)
            return 2
    truth_doc = json.loads(TRUTH.read_text())
    truth = {t["frame"]: t["face"] for t in truth_doc["frames_truth"] if t.get("face")}
    work = args.keep or Path(tempfile.mkdtemp(prefix="edgert-int8-acc-"))
    work.mkdir(parents=True, exist_ok=True)
    calib = work / "calib"
    calib.mkdir(exist_ok=True)
    make_calibration_images(calib)
    rows = []
    for name in ("blazeface_short", "blazeface_full"):
        onnx = ROOT / f"models/{name}.onnx"
        engine = work / f"{name}_{args.precision}.edgert"
        cmd = [str(EDGERT), "build", str(onnx), "-o", str(engine), "--precision", args.precision]
        if args.precision != "fp16":
            cmd += ["--calib", str(calib), "--calib-mean", "127.5", "--calib-std", "127.5",
                    "--calib-method", args.method,
                    "--calib-cache", str(work / f"{name}_{args.method.replace(':', '_')}.calib")]
        if args.precision == "int8":
            # Every convolution in INT8, even where f32 is faster on this CPU: this measures
            # INT8's accuracy, not the speed choice.
            cmd.append("--int8-all")
        if args.precision == "best":
            cmd += ["--max-error", args.max_error]
        built = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)
        summary = [l for l in built.stdout.splitlines() if l.startswith(("precision:", "best:"))]
        fp32 = detect(onnx, work / f"{name}_fp32.jsonl")
        int8 = detect(engine, work / f"{name}_{args.precision}.jsonl")
        row = compare(name, fp32, int8, truth)
        row["precision"] = args.precision
        row["build"] = " / ".join(summary)
        rows.append(row)
    print(f"{args.precision}; calibration: {args.method}, 32 crops of the bundled photos; test: {CLIP.name}")
    for r in rows:
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
