#!/usr/bin/env bash
# FFmpeg 7.1's seven shared libraries as torchcodec loads them (libavutil 59, libavcodec 61,
# libavformat 61, libavdevice 61, libavfilter 10, libswscale 8, libswresample 5), minimal (the
# decoders, demuxers and filters the video peers need, AV1 through the system's libdav1d), for
# GPU machines that have no FFmpeg: OUT/lib with the libraries and libdav1d.so.6.
# Usage: make_ffmpeg_for_torchcodec.sh FFMPEG_7.1_SOURCE OUT (needs a C toolchain, nasm and
# libdav1d-dev).
set -euo pipefail
src="$(cd "${1:?usage: make_ffmpeg_for_torchcodec.sh SOURCE OUT}" && pwd)"
out="$(mkdir -p "${2:?}" && cd "$2" && pwd)"
build="$out/build"; rm -rf "$build"; cp -a "$src/." "$build"
cd "$build" && (make distclean >/dev/null 2>&1 || true)
./configure --prefix="$out/inst" --enable-shared --disable-static --disable-programs --disable-doc \
  --disable-everything --enable-libdav1d --enable-decoder='h264,hevc,vp9,libdav1d' \
  --enable-demuxer='mov,matroska' --enable-parser='h264,hevc,vp9,av1' \
  --enable-bsf='h264_mp4toannexb,hevc_mp4toannexb,vp9_superframe_split,av1_frame_split,null' \
  --enable-protocol=file \
  --enable-filter='scale,format,buffer,buffersink,null,copy,crop,transpose,hflip,vflip,fps,setpts' \
  --enable-swscale --enable-swresample --enable-avfilter --enable-avformat --enable-avdevice \
  --disable-postproc --disable-network --disable-autodetect
make -j"$(nproc)" && make install
mkdir -p "$out/lib"
for l in libavcodec.so.61 libavdevice.so.61 libavfilter.so.10 libavformat.so.61 libavutil.so.59 \
         libswresample.so.5 libswscale.so.8; do cp -L "$out/inst/lib/$l" "$out/lib/$l"; done
cp -L "$(ldconfig -p | awk '/libdav1d.so.6 /{print $NF; exit}')" "$out/lib/"
