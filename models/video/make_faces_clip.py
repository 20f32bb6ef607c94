#!/usr/bin/env python3
"""Builds the demo/test clip models/video/faces.mp4 and its ground truth faces.json.

A head-and-shoulders crop of models/images/astronaut.png (scikit-image, public domain: NASA
photo of Eileen Collins) moves left to right across a 640x360 frame while growing, over a
background of models/images/coffee.png (scikit-image, face-free); the last second shows the
background only (no face). 15 fps, 4 s, H.264 High profile at ~300 kbit/s in MP4 (x264,
one thread: deterministic).

Ground truth: the face box of the still was annotated by hand in astronaut.png pixels
(FACE_BOX, brow to chin, cheek to cheek, the extent BlazeFace boxes cover) and is moved and
scaled with the crop in every frame. Needs Pillow and numpy (the repo's .venv) and
gst-launch-1.0 with x264enc (tests/setup.d/50-media.sh).

Usage: .venv/bin/python models/video/make_faces_clip.py
"""
import hashlib
import json
import os
import subprocess

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGES = os.path.join(HERE, "..", "images")
W, H, FPS = 640, 360, 15
FACE_FRAMES, EMPTY_FRAMES = 45, 15
CROP = (130, 20, 320, 210)  # x0, y0, x1, y1 in astronaut.png: head and shoulders, 190x190
FACE_BOX = (178, 70, 272, 180)  # hand-annotated face in astronaut.png pixels


def frames():
    bg = Image.open(os.path.join(IMAGES, "coffee.png")).convert("RGB")
    # Cover the frame: scale to width, crop the middle.
    bh = round(bg.height * W / bg.width)
    bg = bg.resize((W, bh), Image.BILINEAR)
    top = (bh - H) // 2
    bg = bg.crop((0, top, W, top + H)) if bh >= H else bg.resize((W, H), Image.BILINEAR)
    head = Image.open(os.path.join(IMAGES, "astronaut.png")).convert("RGB").crop(CROP)
    side = CROP[2] - CROP[0]
    truth = []
    for i in range(FACE_FRAMES + EMPTY_FRAMES):
        img = bg.copy()
        face = None
        if i < FACE_FRAMES:
            t = i / (FACE_FRAMES - 1)
            s = round(220 + 120 * t)  # pasted size, 220 -> 340 px
            x = round(10 + (W - s - 20) * t)
            y = round((H - s) / 2 + 8 * np.sin(2 * np.pi * t))
            img.paste(head.resize((s, s), Image.BILINEAR), (x, y))
            k = s / side
            fx0, fy0, fx1, fy1 = FACE_BOX
            face = [
                round(x + (fx0 - CROP[0]) * k, 1),
                round(y + (fy0 - CROP[1]) * k, 1),
                round(x + (fx1 - CROP[0]) * k, 1),
                round(y + (fy1 - CROP[1]) * k, 1),
            ]
        truth.append({"frame": i, "face": face})
        yield np.asarray(img, dtype=np.uint8), truth[-1]


def main():
    out = os.path.join(HERE, "faces.mp4")
    cmd = [
        "gst-launch-1.0", "-q", "fdsrc", "fd=0", "!",
        "rawvideoparse", "format=rgb", f"width={W}", f"height={H}", f"framerate={FPS}/1", "!",
        "videoconvert", "!", "video/x-raw,format=I420", "!",
        "x264enc", "bitrate=300", "speed-preset=slow", "threads=1", f"key-int-max={FPS * 2}", "!",
        "video/x-h264,profile=high", "!", "mp4mux", "!", "filesink", f"location={out}",
    ]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE)
    truth = []
    for rgb, t in frames():
        p.stdin.write(rgb.tobytes())
        truth.append(t)
    p.stdin.close()
    if p.wait() != 0:
        raise SystemExit("gst-launch-1.0 failed")
    meta = {
        "clip": "faces.mp4",
        "width": W,
        "height": H,
        "fps": FPS,
        "frames": len(truth),
        "face_box_in_astronaut_png": FACE_BOX,
        "crop_of_astronaut_png": CROP,
        "made_by": "models/video/make_faces_clip.py",
        "frames_truth": truth,
    }
    with open(os.path.join(HERE, "faces.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    sha = hashlib.sha256(open(out, "rb").read()).hexdigest()
    print(f"wrote {out} ({os.path.getsize(out)} bytes, sha256 {sha}) and faces.json")


if __name__ == "__main__":
    main()
