#!/usr/bin/env bash
# Voice actions (issue 6): espeak-ng synthesizes the keyword training and test utterances
# (models/kws/train.py, the voice-actions tests). Idempotent: installs only what is missing.
set -euo pipefail
if ! command -v espeak-ng >/dev/null 2>&1; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  echo "setup.d/voice: installing espeak-ng"
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends espeak-ng >/dev/null
fi
echo "setup.d/voice: espeak-ng $(espeak-ng --version | awk '{print $4; exit}')"
