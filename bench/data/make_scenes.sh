#!/usr/bin/env bash
# Builds the multi-camera benchmark scene (issue 24's accvlab workload) from a real recording,
# reproducibly: OUT/scene_cam{0..5}.mp4, six synchronized "cameras" of 10 s (300 frames at
# 30 fps), 1600x900 HEVC (x265 fast, CRF 26), GOP 30, no B-frames, closed GOPs, as the
# accvlab table's nuScenes-style cameras. Each camera is a different 1600x900 window of
# ../shared/media/video/phone_1080p.mp4 (an Android phone recording, 41 frames, looped forward
# and back as make_videos.sh does), mirrored for the rear cameras, so the six streams differ
# and cost what real cameras cost to decode. Needs Debian's ffmpeg (libx265).
# Usage: bench/data/make_scenes.sh OUT
set -euo pipefail
out="${1:?usage: make_scenes.sh OUT}"
here="$(cd "$(dirname "$0")/../.." && pwd)"
media="${GM_SHARED_MEDIA:-$here/../shared/media}"
mkdir -p "$out"
src="$media/video/phone_1080p.mp4"
loop="[0:v]split[a][b];[b]reverse[r];[a][r]concat=n=2:v=1,loop=loop=-1:size=82,setpts=N/30/TB,fps=30"
windows=("0:0" "320:0" "160:90" "0:180" "320:180" "160:0")
for cam in 0 1 2 3 4 5; do
    crop="crop=1600:900:${windows[$cam]}"
    [ "$cam" -ge 3 ] && crop="$crop,hflip"
    ffmpeg -v error -y -i "$src" -filter_complex "$loop,$crop" -an -t 10 -c:v libx265 -preset fast \
        -crf 26 -x265-params "bframes=0:keyint=30:min-keyint=30:scenecut=0:open-gop=0:log-level=error" \
        -pix_fmt yuv420p -tag:v hvc1 "$out/scene_cam$cam.mp4"
done
