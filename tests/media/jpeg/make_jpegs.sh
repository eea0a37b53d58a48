#!/usr/bin/env bash
# Small JPEGs with each chroma layout the GPU colour kernel upsamples, at odd sizes so that the
# planes' last columns and rows are exercised: a 201x151 crop of the bundled baboon photo,
# encoded by libjpeg-turbo's cjpeg (ffmpeg's encoder has no 4:4:0 and rounds sizes to even).
set -euo pipefail
cd "$(dirname "$0")"
src=../../../assets/demo/images/animals/baboon.jpg
ffmpeg -v error -y -i "$src" -vf format=rgb24,crop=201:151:97:123 -f image2pipe -vcodec ppm - > /tmp/gm-baboon-crop.ppm
for s in 2x2:420 2x1:422 1x2:440; do
    cjpeg -quality 92 -sample "${s%%:*}" -outfile "baboon-201x151-${s##*:}.jpg" /tmp/gm-baboon-crop.ppm
done
rm -f /tmp/gm-baboon-crop.ppm
ls -la
