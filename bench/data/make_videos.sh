#!/usr/bin/env bash
# Builds the video benchmark set from a real recording, reproducibly (fixed encoder settings):
#   OUT/bench_1080p_h264.mp4: 10 s (300 frames) of ../shared/media/video/phone_1080p.mp4
#     (an Android phone recording, 41 frames), looped forward and back, 1920x1080, x264 medium,
#     CRF 23, 3 B-frames, GOP 30.
#   OUT/bench_1080p_hevc.mp4: its HEVC twin (x265 fast, CRF 26, 3 B-frames, GOP 30, x265's
#     default open GOP).
#   OUT/bench_1080p_h264_gop250.mp4: the H.264 encode with a 250-frame GOP (x264's default).
#   OUT/bench_1080p_vp9.webm: its VP9 twin in WebM (libvpx good, CRF 32, GOP 30, alt-ref
#     frames in superframes as libvpx makes them by default).
#   OUT/bench_1080p_av1.mp4: its AV1 twin (SVT-AV1 preset 10, CRF 35, GOP 30): the CPU route's
#     workload where NVDEC has no AV1 (H100, H200, A100), alone and mixed with the H.264 file.
#   OUT/long_1080p_10min.mp4: 10 minutes (18,000 frames) of the same loop at 1080p, CRF 40,
#     GOP 250: the index-build workload (indexing cost grows with frames and keyframes, not
#     with bytes, so a low bitrate keeps the file small enough to carry to the GPU machine).
# Needs Debian's ffmpeg (libx264, libx265, libvpx, libsvtav1). Usage: bench/data/make_videos.sh OUT
set -euo pipefail
out="${1:?usage: make_videos.sh OUT}"
here="$(cd "$(dirname "$0")/../.." && pwd)"
media="${GM_SHARED_MEDIA:-$here/../shared/media}"
mkdir -p "$out"
src="$media/video/phone_1080p.mp4"
loop="[0:v]split[a][b];[b]reverse[r];[a][r]concat=n=2:v=1,loop=loop=-1:size=82,setpts=N/30/TB,fps=30"
x264() { ffmpeg -v error -y -i "$src" -filter_complex "$loop" -an -t "$1" -c:v libx264 -preset medium "${@:3}" -pix_fmt yuv420p "$out/$2"; }
x264 10 bench_1080p_h264.mp4 -crf 23 -bf 3 -g 30 -keyint_min 30 -sc_threshold 0
x264 10 bench_1080p_h264_gop250.mp4 -crf 23 -bf 3 -g 250
ffmpeg -v error -y -i "$src" -filter_complex "$loop" -an -t 10 -c:v libx265 -preset fast -crf 26 \
    -x265-params "bframes=3:keyint=30:min-keyint=30:scenecut=0:log-level=error" -pix_fmt yuv420p \
    -tag:v hvc1 "$out/bench_1080p_hevc.mp4"
ffmpeg -v error -y -i "$src" -filter_complex "$loop" -an -t 10 -c:v libvpx-vp9 -deadline good \
    -cpu-used 4 -row-mt 1 -crf 32 -b:v 0 -g 30 -keyint_min 30 -pix_fmt yuv420p "$out/bench_1080p_vp9.webm"
ffmpeg -v error -y -i "$src" -filter_complex "$loop" -an -t 10 -c:v libsvtav1 -preset 10 -crf 35 \
    -g 30 -pix_fmt yuv420p "$out/bench_1080p_av1.mp4"
x264 600 long_1080p_10min.mp4 -crf 40 -bf 3 -g 250 -preset veryfast
ls -l "$out"
