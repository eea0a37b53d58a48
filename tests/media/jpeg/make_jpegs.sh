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

# Layouts the CPU path hands to libjpeg-turbo (issue 25), made from the 4:2:0 file by jpegtran
# without re-quantizing: arithmetic coding, one scan per component (sequential, SOF0), and a
# 4:2:0 image smaller than one MCU. Their reference pixels are djpeg's (libjpeg-turbo 2.1.5,
# Debian), as MD5s of its RGB output in libjpeg_djpeg.md5.
jpegtran -arithmetic -outfile baboon-201x151-420-arith.jpg baboon-201x151-420.jpg
printf '0;\n1;\n2;\n' > /tmp/gm-scans.txt
jpegtran -scans /tmp/gm-scans.txt -outfile baboon-201x151-420-one-scan-per-component.jpg baboon-201x151-420.jpg
rm -f /tmp/gm-scans.txt
jpegtran -crop 12x10+0+0 -outfile baboon-12x10-420.jpg baboon-201x151-420.jpg
# Progressive (jpegtran's default script), whose scan parameters the tests break.
jpegtran -progressive -outfile baboon-201x151-420-progressive.jpg baboon-201x151-420.jpg
for f in baboon-201x151-420-arith baboon-201x151-420-one-scan-per-component baboon-12x10-420; do
    # The pixels after the PPM header's three lines.
    echo "$(djpeg -ppm "$f.jpg" 2>/dev/null | tail -n +4 | md5sum | cut -d' ' -f1)  $f.jpg"
done > libjpeg_djpeg.md5
ls -la

# ../jpeg-damaged: three damaged files from image-rs/jpeg-decoder's fuzz corpus (fuzz/afl_in;
# MIT/Apache-2.0), copied, not made here, kept apart from the clean fixtures that tests decode
# by glob. libjpeg recovers each with a warning (17 junk bytes before the scan, a bad Huffman
# code, scan parameters out of range; the third is also cut short), and mozjpeg's older copy
# of libjpeg recovered them differently. The reference is libjpeg-turbo's C code
# (JSIMD_FORCENONE=1), which gm builds without its SIMD extensions: the two conceal damaged
# coefficients differently (the SIMD IDCT works in 16 bits), while on clean data they agree.
for f in ../jpeg-damaged/*.jpg; do
    echo "$(JSIMD_FORCENONE=1 djpeg -ppm "$f" 2>/dev/null | tail -n +4 | md5sum | cut -d' ' -f1)  $(basename "$f")"
done > ../jpeg-damaged/libjpeg_djpeg.md5
