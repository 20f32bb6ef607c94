#!/usr/bin/env python3
"""Curates the conformance manifests from a survey run.

Runs the conformance test in survey mode (EDGERT_CONFORMANCE_ALL=1), then:
* moves cases listed in excluded/*.txt that now pass into the matching enabled/*.txt;
* adds passing cases that no list mentions to enabled/other.txt;
* reports enabled cases that fail (fix them or exclude them with a reason by hand).
Exclusion reasons are kept for what still fails. Usage: curate.py [--dry-run]
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def read(path):
    out = []
    if os.path.exists(path):
        for line in open(path):
            name = line.split("#")[0].strip()
            if name:
                out.append((name, line.rstrip("\n")))
    return out


def main():
    dry = "--dry-run" in sys.argv
    env = dict(os.environ, EDGERT_CONFORMANCE_ALL="1")
    run = subprocess.run(
        ["cargo", "test", "-q", "-p", "edgert-core", "--test", "conformance", "--", "--nocapture"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    passed = set(re.findall(r"^PASS (\S+)", run.stdout, re.M))
    failed = dict(re.findall(r"^FAIL (\S+): (.*)$", run.stdout, re.M))
    known = set()
    moved = 0
    for fam_file in sorted(os.listdir(os.path.join(HERE, "excluded"))):
        exc_path = os.path.join(HERE, "excluded", fam_file)
        en_path = os.path.join(HERE, "enabled", fam_file)
        exc = read(exc_path)
        en = read(en_path)
        known |= {n for n, _ in exc} | {n for n, _ in en}
        now = [n for n, _ in exc if n in passed]
        if now and not dry:
            with open(exc_path, "w") as f:
                f.write("".join(line + "\n" for n, line in exc if n not in passed))
            with open(en_path, "a") as f:
                f.write("".join(n + "\n" for n in now))
        moved += len(now)
    for fam_file in os.listdir(os.path.join(HERE, "enabled")):
        known |= {n for n, _ in read(os.path.join(HERE, "enabled", fam_file))}
    new = sorted(passed - known)
    if new and not dry:
        with open(os.path.join(HERE, "enabled", "other.txt"), "a") as f:
            f.write("".join(n + "\n" for n in new))
    print(f"survey: {len(passed)} pass, {len(failed)} fail; moved {moved} from excluded to enabled; {len(new)} new to enabled/other.txt")
    unlisted_fail = sorted(n for n in failed if n not in known)
    if unlisted_fail:
        print("failing and unlisted (exclude with a reason):")
        for n in unlisted_fail:
            print(f"  {n}: {failed[n][:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
