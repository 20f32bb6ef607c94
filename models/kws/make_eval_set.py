#!/usr/bin/env python3
"""Writes the labelled evaluation set for `voice-actions eval DIR` (streaming, held-out voices).

Only the 21 held-out voices of train.py (accents ACCENTS_HELD x variants VARIANTS_HELD) speak
here, so no voice in this set was used to train the heads. Two kinds of 16 kHz mono WAV files:

* `pos/NNN.wav` (~60 s each): keywords said one at a time, each after 1-2.5 s of background,
  half of them after a carrier phrase ("okay", "please", ...), then 2-3 s of background. The
  speaking voice, speed (120-200 wpm) and pitch (25-75) vary per utterance; reverb on half;
  background noise (white/pink) at 5-30 dB SNR on 80% of the files: train.py's augmentation.
* `neg/NNN.wav` (~60 s each): speech without any keyword (sentences drawn from a small
  grammar and a fixed list, some using the keywords' words in other orders: "the light is
  on", "stop the car", "record it"), with pauses, plus noise bursts, tone chords and silence.

`labels.json` lists every file, its kind, its length, and for positives each keyword's start
and end in ms (from espeak's trimmed output, so `end_ms` is where the voice stops). Nothing
here is committed: it is regenerated (deterministically for a seed) by

    .venv/bin/python models/kws/make_eval_set.py --out /tmp/kws_eval --pos-per-keyword 100 --neg-minutes 60

Needs espeak-ng (tests/setup.d/60-voice.sh) and numpy.
"""
import argparse
import json
import os
import re
import sys
import tempfile
import wave

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import (ACCENTS_HELD, KEYWORDS, SR, VARIANTS_HELD, gap, music, noise, reverb,  # noqa: E402
                   synth, voices)

CARRIERS = ["okay", "please", "alright then", "hmm", "so", "now", "excuse me", "you know what"]

# Fixed sentences (some reuse keyword words in other orders: hard negatives).
SENTENCES = [
    "the light is on in the kitchen", "turn it off when you leave", "stop the car at the corner",
    "we should start early tomorrow", "is the recorder working", "record it for later",
    "the edge of the knife is sharp", "hey there, how is it going", "the lights were bright",
    "start the engine and wait", "please stop talking", "the recording studio is closed",
    "I left my keys on the table", "the weather is nice today", "can you hear me now",
    "the train leaves at seven", "let me think about it", "she sells sea shells by the shore",
    "the children are playing outside", "my phone is almost out of battery",
    "they stopped at the red light", "a flight to london leaves at noon", "the night is long",
    "put the kettle on", "switch off the fan", "record player", "a new world record",
    "he is on the edge of his seat", "hedge the bet", "hey, wait for me", "stop and listen",
    "the party starts at eight", "we lit a candle", "off we go", "on and on it goes",
    "turn the music down please", "the meeting was recorded", "lightning and thunder",
    "the cat sat on the mat", "how much does it cost", "I think it will rain",
    "open the window a little", "the dog is barking again", "dinner is ready",
    "what did you say", "that is a great idea", "we need more milk", "the bus is late again",
]
# A small grammar for many more distinct sentences.
SUBJ = ["the man", "my sister", "our neighbour", "the teacher", "a small boy", "the doctor", "everyone",
        "nobody", "the old lady", "my friend", "the driver", "they", "we", "you", "I", "the team"]
VERB = ["wants to see", "bought", "found", "is looking for", "forgot", "likes", "painted", "fixed",
        "talked about", "never saw", "will bring", "cleaned", "sold", "carried", "moved", "lost"]
OBJ = ["the red car", "a blue bicycle", "the garden", "a wooden chair", "the big window", "some bread",
       "the letter", "a new camera", "the heavy box", "an umbrella", "the piano", "a cup of tea",
       "the front door", "the map", "a green lamp", "the old clock", "the recording", "the starter"]
TAIL = ["", "yesterday", "this morning", "last week", "again", "in the evening", "before lunch",
        "at the station", "on the way home", "for the second time", "very quickly", "after work"]


def sentence(rng):
    if rng.random() < 0.3:
        return SENTENCES[rng.integers(len(SENTENCES))]
    parts = [SUBJ[rng.integers(len(SUBJ))], VERB[rng.integers(len(VERB))], OBJ[rng.integers(len(OBJ))],
             TAIL[rng.integers(len(TAIL))]]
    return " ".join(p for p in parts if p)


KW_RE = re.compile(r"\b(" + "|".join(re.escape(k) for k in KEYWORDS) + r")\b")


def say(text, vlist, rng, tmp):
    v = vlist[rng.integers(len(vlist))]
    u = synth(text, v, int(rng.uniform(120, 200)), int(rng.uniform(25, 75)), tmp)
    if rng.random() < 0.5:
        u = reverb(u, rng)
    return u / (np.max(np.abs(u)) + 1e-9)


def finish(x, rng, noisy):
    """Background noise at 5-30 dB SNR (relative to the speech level) on `noisy` files, a level."""
    x = x * rng.uniform(0.1, 0.9)
    if noisy:
        act = np.abs(x) > 1e-3
        sig = np.sqrt(np.mean(x[act] ** 2)) if np.any(act) else 0.05
        snr = rng.uniform(5, 30)
        x = x + noise(len(x), rng) * sig / (10 ** (snr / 20))
    else:
        x = x + 1e-4 * rng.standard_normal(len(x)).astype(np.float32)
    return np.clip(x, -1, 1).astype(np.float32)


def write_wav(path, x):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes((x * 32767).astype(np.int16).tobytes())


def positive_file(rng, vlist, tmp, todo, seconds):
    """Keywords from `todo` (consumed) until the file is `seconds` long. Returns audio, events."""
    parts, events, n = [], [], 0
    while todo and n < seconds * SR:
        kw = todo.pop()
        seg = [gap(rng, 1.0, 2.5)]
        if rng.random() < 0.5:
            seg += [say(CARRIERS[rng.integers(len(CARRIERS))], vlist, rng, tmp), gap(rng, 0.15, 0.6)]
        for s in seg:
            parts.append(s)
            n += len(s)
        u = say(kw, vlist, rng, tmp)
        events.append({"keyword": kw, "start_ms": n * 1000 // SR, "end_ms": (n + len(u)) * 1000 // SR})
        parts.append(u)
        n += len(u)
        t = gap(rng, 2.0, 3.0)
        parts.append(t)
        n += len(t)
    return np.concatenate(parts), events


def negative_file(rng, vlist, tmp, seconds):
    parts, n, kinds = [], 0, {"speech_s": 0.0, "other_s": 0.0}
    while n < seconds * SR:
        r = rng.random()
        if r < 0.8:
            text = sentence(rng)
            if KW_RE.search(text):
                continue
            s = say(text, vlist, rng, tmp)
            kinds["speech_s"] += len(s) / SR
        elif r < 0.88:
            s = noise(int(rng.uniform(0.5, 3) * SR), rng) * 0.3
            kinds["other_s"] += len(s) / SR
        elif r < 0.96:
            s = music(int(rng.uniform(1, 4) * SR), rng) * 0.5
            kinds["other_s"] += len(s) / SR
        else:
            s = np.zeros(int(rng.uniform(0.5, 3) * SR), np.float32)
        parts += [s.astype(np.float32), gap(rng, 0.2, 1.5)]
        n += len(s) + len(parts[-1])
    return np.concatenate(parts), kinds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder to write (created)")
    ap.add_argument("--pos-per-keyword", type=int, default=100)
    ap.add_argument("--neg-minutes", type=float, default=60.0)
    ap.add_argument("--file-seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=61)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    vlist = voices(ACCENTS_HELD, VARIANTS_HELD)
    os.makedirs(os.path.join(args.out, "pos"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "neg"), exist_ok=True)
    files = []
    todo = [k for k in KEYWORDS for _ in range(args.pos_per_keyword)]
    rng.shuffle(todo)
    with tempfile.TemporaryDirectory() as tmp:
        i = 0
        while todo:
            x, ev = positive_file(rng, vlist, tmp, todo, args.file_seconds)
            x = finish(x, rng, rng.random() < 0.8)
            name = f"pos/{i:03d}.wav"
            write_wav(os.path.join(args.out, name), x)
            files.append({"file": name, "kind": "positive", "ms": len(x) * 1000 // SR, "events": ev})
            i += 1
        total, i, speech, other = 0.0, 0, 0.0, 0.0
        while total < args.neg_minutes * 60:
            x, kinds = negative_file(rng, vlist, tmp, min(args.file_seconds, args.neg_minutes * 60 - total))
            x = finish(x, rng, rng.random() < 0.5)
            name = f"neg/{i:03d}.wav"
            write_wav(os.path.join(args.out, name), x)
            files.append({"file": name, "kind": "negative", "ms": len(x) * 1000 // SR, "events": []})
            total += len(x) / SR
            speech += kinds["speech_s"]
            other += kinds["other_s"]
            i += 1
            print(f"negative {total / 60:.1f}/{args.neg_minutes} min", end="\r", flush=True)
    meta = {
        "made_by": "models/kws/make_eval_set.py", "seed": args.seed, "sample_rate": SR,
        "voices": vlist, "keywords": KEYWORDS,
        "negative_s": round(total, 1), "negative_speech_s": round(speech, 1), "negative_noise_music_s": round(other, 1),
        "files": files,
    }
    with open(os.path.join(args.out, "labels.json"), "w") as fh:
        json.dump(meta, fh, indent=1)
    npos = sum(len(f["events"]) for f in files)
    print(f"\nwrote {len(files)} files to {args.out}: {npos} keyword utterances, {total / 3600:.2f} h negative audio "
          f"({speech / 3600:.2f} h speech)")


if __name__ == "__main__":
    sys.exit(main())
