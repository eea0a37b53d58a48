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

# VP9 and AV1, in WebM/Matroska and MP4 (vp09, av01), and H.264/HEVC in Matroska. +bitexact
# keeps the muxers' random UIDs and version strings out, so a rerun writes the same bytes.
bx=(-map_metadata -1 -fflags +bitexact)
vp9=(-c:v libvpx-vp9 -b:v 150k -g 10 -keyint_min 10 -auto-alt-ref 1 -lag-in-frames 25 -deadline good -cpu-used 4 -threads 1 -passlogfile "$out/vp9log")
# Two-pass with alt-ref frames: superframes holding a hidden frame.
ff "${base[@]}" "${small[@]}" "${bx[@]}" "${vp9[@]}" -pass 1 -f null -
ff "${base[@]}" "${small[@]}" "${bx[@]}" "${vp9[@]}" -pass 2 "$out/vp9_altref.webm"
rm -f "$out"/vp9log*
ff "${base[@]}" "${small[@]}" "${bx[@]}" -c:v libvpx-vp9 -profile:v 2 -pix_fmt yuv420p10le -b:v 0 -crf 40 -g 10 -deadline good -cpu-used 5 -threads 1 "$out/vp9_10bit.webm"
ff "${base[@]}" "${small[@]}" "${bx[@]}" -c:v libvpx-vp9 -b:v 0 -crf 40 -g 10 -deadline good -cpu-used 5 -threads 1 "$out/vp9.mp4"
ff "${base[@]}" -vf "scale=321:181" "${bx[@]}" -c:v libvpx-vp9 -b:v 0 -crf 40 -g 10 -deadline good -cpu-used 5 -threads 1 "$out/vp9_odd.webm"
# libaom with hidden frames shown later by show_existing_frame; SVT-AV1; 10-bit; film grain.
ff "${base[@]}" "${small[@]}" "${bx[@]}" -c:v libaom-av1 -b:v 150k -g 10 -keyint_min 10 -cpu-used 8 -lag-in-frames 19 -auto-alt-ref 1 -threads 1 "$out/av1_hidden.webm"
ff "${base[@]}" "${small[@]}" "${bx[@]}" -c:v libsvtav1 -preset 10 -crf 50 -g 10 "$out/av1_svt.webm"
ff "${base[@]}" "${small[@]}" "${bx[@]}" -c:v libaom-av1 -pix_fmt yuv420p10le -crf 45 -g 10 -cpu-used 8 -threads 1 "$out/av1_10bit.webm"
ff "${base[@]}" "${small[@]}" "${bx[@]}" -c:v libsvtav1 -preset 10 -crf 50 -g 10 -svtav1-params film-grain=8 "$out/av1_grain.webm"
ff "${base[@]}" -vf "scale=321:181" "${bx[@]}" -c:v libaom-av1 -crf 45 -g 10 -cpu-used 8 -threads 1 "$out/av1_odd.mp4"
ff "${base[@]}" "${small[@]}" "${bx[@]}" -c:v libx264 -preset fast -crf 30 -bf 2 -g 10 -pix_fmt yuv420p "$out/h264_bframes.mkv"
ff "${base[@]}" "${small[@]}" "${bx[@]}" -c:v libx265 -preset fast -crf 32 -x265-params log-level=error:keyint=12:min-keyint=12:scenecut=0:open-gop=1:bframes=3 -pix_fmt yuv420p "$out/hevc_bframes.mkv"
# Written to a pipe, the muxer cannot seek back: no Cues and an unknown-size Segment.
ffmpeg -hide_banner -loglevel error -i "$out/vp9_altref.webm" -c copy "${bx[@]}" -f webm - > "$out/vp9_no_cues.webm"

# Unsupported codec (MPEG-4 Part 2), for the error path.
ff "${base[@]}" "${small[@]}" -frames:v 5 -c:v mpeg4 -q:v 10 "$out/mpeg4_part2.mp4"

for f in "$out"/*.mp4 "$out"/*.webm "$out"/*.mkv; do
    name=$(basename "$f"); name=${name%.*}
    ffprobe -v error -select_streams v:0 -show_entries packet=pts,dts,duration,pos,size,flags -of csv=p=0 "$f" > "$gold/$name.packets.csv"
    ffprobe -v error -select_streams v:0 -show_entries stream=codec_name,codec_tag_string,profile,width,height,pix_fmt,time_base,nb_frames,has_b_frames -of default=nw=1 "$f" > "$gold/$name.stream.txt"
    case "$name" in
        mpeg4*) ;;
        *main10*|*10bit*) ffmpeg -hide_banner -loglevel error -i "$f" -fps_mode passthrough -pix_fmt yuv420p10le -f framemd5 - > "$gold/$name.framemd5" ;;
        *) ffmpeg -hide_banner -loglevel error -i "$f" -fps_mode passthrough -pix_fmt yuv420p -f framemd5 - > "$gold/$name.framemd5" ;;
    esac
done
# NVDEC applies AV1 film grain, as libdav1d does by default; the grain-free frames too.
ffmpeg -hide_banner -loglevel error -export_side_data film_grain -i "$out/av1_grain.webm" -fps_mode passthrough -pix_fmt yuv420p -f framemd5 - > "$gold/av1_grain.nograin.framemd5"
# The shared real videos: goldens only (the files stay in ../shared/media/video).
for f in ../../../shared/media/video/*.mp4; do
    name=shared_$(basename "$f" .mp4)
    [ -f "$f" ] || continue
    ffprobe -v error -select_streams v:0 -show_entries packet=pts,dts,duration,pos,size,flags -of csv=p=0 "$f" > "$gold/$name.packets.csv"
    ffprobe -v error -select_streams v:0 -show_entries stream=codec_name,codec_tag_string,profile,width,height,pix_fmt,time_base,nb_frames,has_b_frames -of default=nw=1 "$f" > "$gold/$name.stream.txt"
    ffmpeg -hide_banner -loglevel error -i "$f" -map 0:v:0 -fps_mode passthrough -pix_fmt yuv420p -f framemd5 - > "$gold/$name.framemd5"
done
# The CPU decoder keeps 4:4:4 as decoded: its goldens in the stream's own format.
f=../../../shared/media/video/cockatoo_h264_444.mp4
[ -f "$f" ] && ffmpeg -hide_banner -loglevel error -i "$f" -map 0:v:0 -fps_mode passthrough -pix_fmt yuv444p -f framemd5 - > "$gold/shared_cockatoo_h264_444.yuv444p.framemd5"
ls -la "$out"
