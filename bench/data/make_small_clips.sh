#!/usr/bin/env bash
# Small videos as Something-Something-style datasets hold them (issue 21's small-clips workload):
# N (default 50) clips of 2-10 s cut from ../shared/media/video/phone_1080p.mp4 (looped forward
# and back) at different offsets: even ones VP9 in WebM at 427x240, 12 fps (SSv2's shape), odd
# ones H.264 in MP4 at 640x360, 30 fps (x264 veryfast, 2 B-frames); GOPs of 2 s; durations
# 2 + (i * 7 mod 9) seconds. The bench copies them to 500 distinct files on the GPU machine.
# Needs Debian's ffmpeg (libx264, libvpx). Usage: bench/data/make_small_clips.sh OUT [N]
set -euo pipefail
out="${1:?usage: make_small_clips.sh OUT [N]}"; n="${2:-50}"
here="$(cd "$(dirname "$0")/../.." && pwd)"
src="${GM_SHARED_MEDIA:-$here/../shared/media}/video/phone_1080p.mp4"
mkdir -p "$out"
loop="[0:v]split[a][b];[b]reverse[r];[a][r]concat=n=2:v=1,loop=loop=-1:size=82,setpts=N/30/TB,fps=30"
for i in $(seq 0 $((n - 1))); do
    secs=$((2 + (i * 7) % 9)); skip=$(( (i * 13) % 20 ))
    if [ $((i % 2)) -eq 0 ]; then
        ffmpeg -v error -y -i "$src" -filter_complex "$loop,trim=start=$skip,setpts=PTS-STARTPTS,scale=427:240,fps=12" \
            -an -t "$secs" -c:v libvpx-vp9 -deadline realtime -cpu-used 8 -crf 36 -b:v 0 -g 24 \
            -pix_fmt yuv420p "$out/clip_$(printf %03d "$i").webm"
    else
        ffmpeg -v error -y -i "$src" -filter_complex "$loop,trim=start=$skip,setpts=PTS-STARTPTS,scale=640:360" \
            -an -t "$secs" -c:v libx264 -preset veryfast -crf 26 -bf 2 -g 60 -pix_fmt yuv420p \
            "$out/clip_$(printf %03d "$i").mp4"
    fi
done
ls "$out" | wc -l; du -sh "$out"
