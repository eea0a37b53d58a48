#!/usr/bin/env bash
# Fixtures of display orientation: one short H.264 clip (96x64, 6 frames, from the shared
# birds_720p recording) stored as is and with display matrices that turn it 90, 180 and 270
# degrees (ffmpeg 5.1's `-metadata:s:v rotate=N`, stream copied) and mirror it (the tkhd
# matrix's first entry negated, written here: ffmpeg 5.1 has no option for it). References,
# from Debian's ffmpeg:
#   NAME.yuv          frame 0 of NAME.mp4 as ffmpeg autorotates it, yuv420p (plain.yuv: the
#                     stored frame, the same bitstream in every file)
#   rotations.txt     ffprobe's display-matrix rotation side data per file (empty: none)
# Matroska: the same bitstream with a Projection pose (NAME.mkv), written and autorotated by
# FFmpeg 9 (`-display_rotation`, `-display_hflip`; Debian's 5.1 reads no Matroska
# orientation): $FFMPEG9, e.g. the binary of PyPI's imageio-ffmpeg 0.8.1. Its frames of the
# names both containers share equal 5.1's of the MP4 files (checked below);
# rotate_90_mirror.yuv is its own.
set -euo pipefail
cd "$(dirname "$0")"
src="${GM_FIXTURE_SOURCE:-../../../../shared/media/video/birds_720p.mp4}"
ff() { ffmpeg -hide_banner -loglevel error -y "$@"; }
ff -i "$src" -an -frames:v 6 -vf "scale=96:64" -c:v libx264 -preset fast -crf 28 -bf 0 -g 3 \
    -pix_fmt yuv420p -fflags +bitexact plain.mp4
for r in 90 180 270; do
    ff -i plain.mp4 -c copy -metadata:s:v rotate=$r -fflags +bitexact rotate_$r.mp4
done
python3 - <<'PY'
import struct
d = bytearray(open("plain.mp4", "rb").read())
i = d.index(b"tkhd")
base = i + 8 + (32 if d[i + 4] == 1 else 20) + 16   # version/flags, times and ids, reserved..volume
m = list(struct.unpack(">9i", d[base:base + 36]))
m[0] = -m[0]                                         # a = -1: x' = -x, a left-right mirror
struct.pack_into(">9i", d, base, *m)
open("mirror.mp4", "wb").write(d)
PY
: > rotations.txt
for f in plain rotate_90 rotate_180 rotate_270 mirror; do
    ff -i $f.mp4 -frames:v 1 -f rawvideo -pix_fmt yuv420p $f.yuv
    echo "$f $(ffprobe -v error -select_streams v:0 -show_entries stream_side_data=rotation -of csv=p=0 $f.mp4 | tr -d '\n')" >> rotations.txt
done
ff9() { "${FFMPEG9:?the Matroska fixtures need FFmpeg 9 (FFMPEG9=...)}" -hide_banner -loglevel error -y "$@"; }
mkv() { local name=$1; shift; ff9 "$@" -i plain.mp4 -c copy -fflags +bitexact "$name.mkv"; }
for r in 90 180 270; do mkv rotate_$r -display_rotation $r; done
mkv mirror -display_hflip
mkv rotate_90_mirror -display_rotation 90 -display_hflip
for f in rotate_90 rotate_180 rotate_270 mirror rotate_90_mirror; do
    ff9 -i $f.mkv -frames:v 1 -f rawvideo -pix_fmt yuv420p $f.mkv.yuv
    if [ -e $f.yuv ]; then cmp $f.mkv.yuv $f.yuv && rm $f.mkv.yuv; else mv $f.mkv.yuv $f.yuv; fi
done
ls -la
