#!/usr/bin/env bash
# FFmpeg 7.1's libavcodec 61 and libavutil 59 (libdav1d 1.4 with its assembly, and the codec
# libraries they link) from PyAV 13.1's manylinux wheel, for GPU machines that have no FFmpeg:
# OUT/ holds the libraries under the wheel's hashed names plus libavcodec.so.61 and
# libavutil.so.59 links; OUT.tar.xz (about 12 MB) carries them. Use with
# `GM_FFMPEG_DIR=OUT LD_LIBRARY_PATH=OUT`: the libraries name one another by their hashed
# names and carry no RUNPATH, so the loader finds them only on the library path.
# Needs pip (to download the wheel), unzip, readelf and xz. Usage: ffmpeg_from_pyav_wheel.sh OUT
set -euo pipefail
out="$(mkdir -p "${1:?usage: ffmpeg_from_pyav_wheel.sh OUT}" && cd "$1" && pwd)"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
  --platform manylinux_2_17_x86_64 av==13.1.0 -d "$tmp"
unzip -q "$tmp"/av-13.1.0-*.whl 'av.libs/*' -d "$tmp/w"
libs="$tmp/w/av.libs"
# Copy what libavcodec and libavutil need, transitively, from the wheel's own libraries.
todo=("$(cd "$libs" && ls libavcodec-*.so.61*)" "$(cd "$libs" && ls libavutil-*.so.59*)")
declare -A seen
while ((${#todo[@]})); do
  f=${todo[0]}; todo=("${todo[@]:1}")
  [[ -n ${seen[$f]:-} ]] && continue
  seen[$f]=1; cp "$libs/$f" "$out/"
  for d in $(readelf -d "$libs/$f" | awk -F'[][]' '/NEEDED/{print $2}'); do
    [[ -f $libs/$d ]] && todo+=("$d")
  done
done
(cd "$out" && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
tar -cJf "$out.tar.xz" -C "$out" .
ls -l "$out" "$out.tar.xz"
