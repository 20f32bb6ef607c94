#!/usr/bin/env python3
"""Compares two folders of float32 .npy outputs within DESIGN.md's f32 tolerance.

    cross/compare_npy.py ACTUAL_DIR EXPECTED_DIR

Every EXPECTED_DIR/*.npy must exist in ACTUAL_DIR with the same shape, and each element
satisfy |a - e| <= 1e-4 |e| or |a - e| <= 1e-5 * max(1, max |e|) (edgert_core::compare's
rule). Standard library only (no numpy), so it runs before any virtual environment exists.
Exit status 1 on any mismatch.
"""
import ast
import math
import pathlib
import struct
import sys


def read_npy(path):
    b = path.read_bytes()
    if b[:6] != b"\x93NUMPY":
        raise SystemExit(f"{path}: not a .npy file")
    if b[6] == 1:
        (hlen,), start = struct.unpack("<H", b[8:10]), 10
    else:
        (hlen,), start = struct.unpack("<I", b[8:12]), 12
    header = ast.literal_eval(b[start:start + hlen].decode("latin1"))
    if header["descr"] != "<f4" or header["fortran_order"]:
        raise SystemExit(f"{path}: want little-endian float32 in C order, got {header}")
    shape = tuple(header["shape"])
    n = math.prod(shape)
    data = struct.unpack(f"<{n}f", b[start + hlen:start + hlen + 4 * n])
    return shape, data


def main():
    actual, expected = map(pathlib.Path, sys.argv[1:3])
    files = sorted(expected.glob("*.npy"))
    if not files:
        raise SystemExit(f"no .npy files in {expected}")
    bad = 0
    for f in files:
        (sa, a), (se, e) = read_npy(actual / f.name), read_npy(f)
        if sa != se:
            print(f"{f.name}: shape {sa} != expected {se}")
            bad += 1
            continue
        scale = max([1.0] + [abs(v) for v in e if math.isfinite(v)])
        worst, fails = 0.0, 0
        for x, y in zip(a, e):
            if math.isnan(x) and math.isnan(y):
                continue
            d = abs(x - y)
            worst = max(worst, d)
            if not (d <= 1e-5 * scale or d <= 1e-4 * abs(y)):
                fails += 1
        print(f"{f.name}: {len(e)} values, max abs diff {worst:.3g}, {fails} outside tolerance")
        bad += fails > 0
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
