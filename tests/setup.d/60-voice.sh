#!/usr/bin/env bash
# Voice actions (issue 6): espeak-ng synthesizes the keyword training and test utterances
# (models/kws/train.py, the voice-actions tests); gstreamer1.0-alsa for alsa:// capture.
# Idempotent: installs only what is missing.
set -euo pipefail
if ! command -v espeak-ng >/dev/null 2>&1; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  echo "setup.d/voice: installing espeak-ng"
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends espeak-ng >/dev/null
fi
# alsasrc for `alsa://` capture (edgert-audio's GStreamer source; its test checks the error
# for a missing device).
if ! dpkg-query -W -f='${Status}' gstreamer1.0-alsa 2>/dev/null | grep -q "install ok installed"; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  echo "setup.d/voice: installing gstreamer1.0-alsa"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends gstreamer1.0-alsa >/dev/null
fi
echo "setup.d/voice: espeak-ng $(espeak-ng --version | awk '{print $4; exit}')"
