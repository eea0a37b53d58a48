#!/usr/bin/env bash
# Builds the JPEG benchmark sets from real media, reproducibly (fixed seed, fixed sources):
#   OUT/imagenet: 200 ImageNet-style JPEGs: random crops (area 30-100%, aspect 3:4 to 4:3) of
#     real photographs (../shared/media/jpeg/photos, frames of ../shared/media/video, and the
#     photographic wallpapers of Debian's lomiri-wallpapers packages), longer side 500 px,
#     baseline 4:2:0, libjpeg quality 90 (cjpeg).
#   OUT/large: 6 large photos (those wallpapers at 3.5-8 MP), half baseline, half progressive,
#     quality 90.
# Needs ffmpeg, cjpeg (libjpeg-turbo-progs) and apt-get download (Debian).
# Usage: bench/data/make_jpeg_sets.sh OUT
set -euo pipefail
out="${1:?usage: make_jpeg_sets.sh OUT}"
here="$(cd "$(dirname "$0")/../.." && pwd)"
media="${GM_SHARED_MEDIA:-$here/../shared/media}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out/imagenet" "$out/large" "$work/src" "$work/deb"

(cd "$work/deb" && apt-get download lomiri-wallpapers-20.04 ukui-wallpapers >/dev/null 2>&1)
for d in "$work"/deb/*.deb; do dpkg-deb -x "$d" "$work/deb/x"; done
wallpapers=(Fossa_by_Jasper_Roks Kleiber_by_Lukas_Baubkus Infinite-Sea_by_Aury88
            Painting-Colors_by__herobrine7gamer the-mouse rhythm)

n=0
for f in "$media"/jpeg/photos/*.jpg; do cp "$f" "$work/src/$(printf %03d $n).jpg"; n=$((n + 1)); done
for v in "$media"/video/{birds_720p,phone_1080p,humming_bird_1s}.mp4; do
    ffmpeg -v error -i "$v" -vf "select=not(mod(n\,6))" -fps_mode passthrough \
        "$work/src/v$(basename "$v" .mp4)-%03d.png"
done
for w in "${wallpapers[@]}"; do
    cp "$(find "$work/deb/x" -name "$w.jpg")" "$work/src/w-$w.jpg"
done
mapfile -t sources < <(ls "$work/src" | sort)

RANDOM=20261121
for k in $(seq 0 199); do
    src="$work/src/${sources[$((k % ${#sources[@]}))]}"
    read -r w h < <(ffprobe -v error -show_entries stream=width,height -of csv=p=0 "$src" | tr ',' ' ')
    area=$((30 + RANDOM % 71))          # percent of the source area
    aspect=$((75 + RANDOM % 59))        # width/height in percent, 3:4 to 4:3
    cw=$(awk -v w="$w" -v h="$h" -v a="$area" -v r="$aspect" 'BEGIN{x=sqrt(w*h*a/100*r/100); if(x>w)x=w; print int(x/2)*2}')
    ch=$(awk -v w="$w" -v h="$h" -v a="$area" -v r="$aspect" -v cw="$cw" 'BEGIN{y=w*h*a/100/cw; if(y>h)y=h; print int(y/2)*2}')
    x=$(( (w - cw) > 0 ? RANDOM % (w - cw + 1) : 0 ))
    y=$(( (h - ch) > 0 ? RANDOM % (h - ch + 1) : 0 ))
    if [ "$cw" -ge "$ch" ]; then scale="500:-2"; else scale="-2:500"; fi
    ffmpeg -v error -y -i "$src" -vf "crop=$cw:$ch:$x:$y,scale=$scale:flags=area" \
        -frames:v 1 -c:v ppm -f image2 "$work/crop.ppm"
    cjpeg -quality 90 -sample 2x2 -outfile "$out/imagenet/$(printf %04d "$k").jpg" "$work/crop.ppm"
done

k=0
for w in "${wallpapers[@]}"; do
    src="$work/src/w-$w.jpg"
    ffmpeg -v error -y -i "$src" -vf "scale='if(gt(iw*ih,8000000),trunc(iw*sqrt(8000000/(iw*ih))/2)*2,iw)':-2:flags=area" \
        -frames:v 1 -c:v ppm -f image2 "$work/large.ppm"
    if [ $((k % 2)) -eq 0 ]; then prog=(); else prog=(-progressive); fi
    cjpeg -quality 90 "${prog[@]}" -outfile "$out/large/$(printf %02d $k)-$w.jpg" "$work/large.ppm"
    k=$((k + 1))
done
du -sh "$out"/imagenet "$out"/large
