#!/usr/bin/env bash
# sampling.tar.gz: one small JPEG for every sampling-factor combination libjpeg-turbo's cjpeg
# writes (-sample HxV,HxV,HxV with factors 1-4; cjpeg refuses fractional ratios and MCUs of
# more than 10 blocks), baseline (b-*) and progressive (p-*), from a 45x37 crop of the bundled
# baboon photo (odd sizes: partial MCUs at the right and bottom edges). sampling_djpeg.md5
# holds the MD5 of djpeg's RGB pixels for each (libjpeg-turbo, Debian's libjpeg-turbo-progs),
# the reference the differential test (gm-codec's jpeg_sampling) checks every decoder against.
set -euo pipefail
cd "$(dirname "$0")"
src=../../../assets/demo/images/animals/baboon.jpg
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ffmpeg -v error -y -i "$src" -vf format=rgb24,crop=45:37:97:123 -f image2pipe -vcodec ppm - > "$work/crop.ppm"
mkdir "$work/sampling"
f=(1 2 3 4)
for a in "${f[@]}"; do for b in "${f[@]}"; do for c in "${f[@]}"; do
for d in "${f[@]}"; do for e in "${f[@]}"; do for g in "${f[@]}"; do
    s="${a}x${b},${c}x${d},${e}x${g}"
    name="${a}x${b}-${c}x${d}-${e}x${g}"
    for mode in b p; do
        args=(-quality 90 -sample "$s")
        [ "$mode" = p ] && args+=(-progressive)
        out="$work/sampling/$mode-$name.jpg"
        cjpeg "${args[@]}" -outfile "$out" "$work/crop.ppm" 2>/dev/null || rm -f "$out"
    done
done; done; done; done; done; done
(cd "$work/sampling" && for j in *.jpg; do
    echo "$(djpeg -ppm "$j" | tail -n +4 | md5sum | cut -d' ' -f1)  $j"
done) > sampling_djpeg.md5
(cd "$work/sampling" && tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - -- *.jpg) \
    | gzip -9n > sampling.tar.gz
echo "$(wc -l < sampling_djpeg.md5) files, $(stat -c %s sampling.tar.gz) bytes"
