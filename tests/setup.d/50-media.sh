#!/usr/bin/env bash
# edgert-media and apps/facedetect: GStreamer development files (gstreamer-rs build) and the
# runtime plugins the tests use (videotestsrc, x264enc, qtdemux/mp4mux, h264parse, avdec_h264,
# rtspsrc, ...), and libclang for the bindgen step of the `v4l` crate (camera discovery).
# Idempotent: installs only what is missing.
set -euo pipefail
pkgs=(pkg-config libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad
  gstreamer1.0-plugins-ugly gstreamer1.0-libav gstreamer1.0-tools libclang-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.d/media: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
