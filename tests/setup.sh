#!/usr/bin/env bash
# One-time set-up on a fresh Debian/Ubuntu (or Jetson L4T) machine, idempotent: checks the
# Rust toolchain, installs the system packages the build and tests need, and makes a Python
# virtual environment (.venv) with the pinned test oracles (tests/requirements.txt) and model
# tools (models/requirements.txt). Called by tests/run.sh and apps/demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

need_rust="1.92"
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found. Install Rust >= $need_rust with rustup (https://rustup.rs), then rerun." >&2
  exit 1
fi
have=$(rustc --version | awk '{print $2}')
if [ "$(printf '%s\n%s\n' "$need_rust" "$have" | sort -V | head -1)" != "$need_rust" ]; then
  echo "setup: rustc $have is older than $need_rust: run 'rustup update'." >&2
  exit 1
fi

# System packages: a C toolchain for crates with build scripts, Python with venv.
missing=()
command -v cc >/dev/null 2>&1 || missing+=(build-essential)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.requirements-stamp
want=$(cat tests/requirements.txt models/requirements.txt 2>/dev/null | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
  reqs=(-r tests/requirements.txt)
  [ -f models/requirements.txt ] && reqs+=(-r models/requirements.txt)
  .venv/bin/python -m pip install -q --disable-pip-version-check "${reqs[@]}"
  echo "$want" > "$stamp"
fi
# Component set-up (system packages a crate's build or tests need): one idempotent script
# per component in tests/setup.d/, run in name order.
for f in tests/setup.d/*.sh; do
  [ -e "$f" ] || continue
  bash "$f"
done
echo "setup: ok (rustc $have, $(.venv/bin/python --version))"
