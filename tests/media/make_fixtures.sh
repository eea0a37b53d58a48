#!/usr/bin/env bash
# Encodes the video fixtures from a real recording (../shared/media/video/birds_720p.mp4) and
# writes their golden files with ffprobe/ffmpeg. Debian's ffmpeg 5.1 (libx264, libx265).
# Re-running it re-encodes everything; encoders are deterministic for a given version, but the
# goldens are what tests check, so commit fixtures and goldens together.
#
# Golden files, per fixture F:
#   golden/F.packets.csv  ffprobe's packets of the first video stream, in file (decode) order:
#                         pts,dts,duration,size,pos,flags  (ffprobe's field order; ticks
#                         of the stream time base)
#   golden/F.stream.txt   ffprobe's stream fields (codec, size, time base, frame count)
#   golden/F.framemd5     ffmpeg's per-frame MD5 of the software decode (presentation order)
set -euo pipefail
cd "$(dirname "$0")"
src="${GM_FIXTURE_SOURCE:-../../../shared/media/video/birds_720p.mp4}"
out=video
gold=golden
mkdir -p "$out" "$gold"
ff() { ffmpeg -hide_banner -loglevel error -y "$@"; }
base=(-i "$src" -an -frames:v 30)
small=(-vf "scale=320:180")

# H.264
ff "${base[@]}" "${small[@]}" -c:v libx264 -preset fast -crf 30 -bf 0 -g 10 -pix_fmt yuv420p "$out/h264_no_bframes.mp4"
ff "${base[@]}" "${small[@]}" -c:v libx264 -preset fast -crf 30 -bf 3 -x264-params b-pyramid=normal:b-adapt=0:keyint=12:min-keyint=12:scenecut=0 -pix_fmt yuv420p "$out/h264_bpyramid.mp4"
ff "${base[@]}" "${small[@]}" -c:v libx264 -preset fast -crf 30 -bf 3 -x264-params open-gop=1:b-adapt=0:keyint=12:min-keyint=12:scenecut=0 -pix_fmt yuv420p "$out/h264_open_gop.mp4"
ff "${base[@]}" "${small[@]}" -c:v libx264 -preset fast -crf 30 -bf 2 -x264-params slices=4:keyint=15 -pix_fmt yuv420p "$out/h264_slices.mp4"
ff "${base[@]}" "${small[@]}" -c:v libx264 -preset fast -crf 30 -bf 2 -g 10 -pix_fmt yuv420p -movflags frag_keyframe+empty_moov+default_base_moof "$out/h264_fragmented.mp4"
ff "${base[@]}" -vf "scale=1366:766" -frames:v 8 -c:v libx264 -preset fast -crf 38 -bf 2 -g 4 -pix_fmt yuv420p "$out/h264_1366x766.mp4"
# Variable frame rate: frame i shown at t = i/30 + (i mod 3)/90 seconds (uneven gaps).
ff "${base[@]}" "${small[@]},setpts='(N/30+mod(N,3)/90)/TB'" -fps_mode vfr -video_track_timescale 90000 -c:v libx264 -preset fast -crf 30 -bf 2 -g 10 -pix_fmt yuv420p "$out/h264_vfr.mp4"

# HEVC
ff "${base[@]}" "${small[@]}" -c:v libx265 -preset fast -crf 32 -tag:v hvc1 -x265-params log-level=error:keyint=12:min-keyint=12:scenecut=0:open-gop=0:bframes=3 -pix_fmt yuv420p "$out/hevc_closed_gop.mp4"
ff "${base[@]}" "${small[@]}" -c:v libx265 -preset fast -crf 32 -tag:v hev1 -x265-params log-level=error:keyint=12:min-keyint=12:scenecut=0:open-gop=1:bframes=3 -pix_fmt yuv420p "$out/hevc_open_gop.mp4"
ff "${base[@]}" "${small[@]}" -c:v libx265 -preset fast -crf 32 -tag:v hvc1 -x265-params log-level=error:keyint=10 -pix_fmt yuv420p10le "$out/hevc_main10.mp4"
ff "${base[@]}" "${small[@]}" -c:v libx265 -preset fast -crf 32 -tag:v hvc1 -x265-params log-level=error:keyint=10:open-gop=1 -pix_fmt yuv420p -movflags frag_keyframe+empty_moov+default_base_moof "$out/hevc_fragmented.mp4"

# Unsupported codec (MPEG-4 Part 2), for the error path.
ff "${base[@]}" "${small[@]}" -frames:v 5 -c:v mpeg4 -q:v 10 "$out/mpeg4_part2.mp4"

for f in "$out"/*.mp4; do
    name=$(basename "$f" .mp4)
    ffprobe -v error -select_streams v:0 -show_entries packet=pts,dts,duration,pos,size,flags -of csv=p=0 "$f" > "$gold/$name.packets.csv"
    ffprobe -v error -select_streams v:0 -show_entries stream=codec_name,codec_tag_string,profile,width,height,pix_fmt,time_base,nb_frames,has_b_frames -of default=nw=1 "$f" > "$gold/$name.stream.txt"
    case "$name" in
        mpeg4*) ;;
        *main10*) ffmpeg -hide_banner -loglevel error -i "$f" -fps_mode passthrough -pix_fmt yuv420p10le -f framemd5 - > "$gold/$name.framemd5" ;;
        *) ffmpeg -hide_banner -loglevel error -i "$f" -fps_mode passthrough -pix_fmt yuv420p -f framemd5 - > "$gold/$name.framemd5" ;;
    esac
done
# The shared real videos: goldens only (the files stay in ../shared/media/video).
for f in ../../../shared/media/video/*.mp4; do
    name=shared_$(basename "$f" .mp4)
    [ -f "$f" ] || continue
    ffprobe -v error -select_streams v:0 -show_entries packet=pts,dts,duration,pos,size,flags -of csv=p=0 "$f" > "$gold/$name.packets.csv"
    ffprobe -v error -select_streams v:0 -show_entries stream=codec_name,codec_tag_string,profile,width,height,pix_fmt,time_base,nb_frames,has_b_frames -of default=nw=1 "$f" > "$gold/$name.stream.txt"
    ffmpeg -hide_banner -loglevel error -i "$f" -map 0:v:0 -fps_mode passthrough -pix_fmt yuv420p -f framemd5 - > "$gold/$name.framemd5"
done
ls -la "$out"
