#!/usr/bin/env bash
# Issue 22's "indexing 1,000 remote short videos": N (1000) short videos (distinct clips of
# 1-4 s: H.264 and HEVC in MP4, VP9 in WebM, 160x120 to 320x240) in a bucket of an S3 server
# on loopback (S3_SERVER, the binary of bench/s3-server), indexed by a VideoDataset over the
# bucket prefix (BIN/gm-loader--remote_index): requests and bytes per video, and the time.
# LONG=1: clips of 20-50 s at 480x360 to 640x480 instead, to show ranged reads of files larger
# than an index's first GET (gm-storage's open_bytes, 256 KiB). HD=1: 20 s clips at 1280x720
# and 6 Mbit/s (H.264 and HEVC only), keyframes about 750 KB apart as in real footage.
# Needs ffmpeg and curl; no GPU. Results: $OUT/remote-index/.
set -eu
out="${OUT:-/tmp/out}/remote-index"; mkdir -p "$out"
bin="${BIN:?folder with gm-loader--remote_index}"
server="${S3_SERVER:?bench/s3-server binary}"
n="${N:-1000}"; distinct="${DISTINCT:-100}"
work=/tmp/gm-remote-index; rm -rf "$work"; mkdir -p "$work/clips" "$work/videos" "$work/s3/bench"
# DISTINCT clips, each copied to N / DISTINCT names.
for i in $(seq 0 $((distinct - 1))); do
    secs=$((1 + i % 4)); w=$((160 + 32 * (i % 6)))
    if [ "${LONG:-0}" = 1 ]; then secs=$((20 + 10 * (i % 4))); w=$((480 + 32 * (i % 6))); fi
    h=$((w * 3 / 4 / 2 * 2))
    src="testsrc2=size=${w}x${h}:rate=25:duration=$secs"
    if [ "${HD:-0}" = 1 ]; then
        src="testsrc2=size=1280x720:rate=25:duration=20,noise=alls=12:allf=t"
        codec=(-c:v libx264 -preset ultrafast); [ $((i % 2)) = 1 ] && codec=(-c:v libx265 -preset ultrafast -x265-params log-level=error)
        ffmpeg -v error -y -f lavfi -i "$src" "${codec[@]}" -b:v 6M -g 25 -pix_fmt yuv420p "$work/clips/c$i.mp4"
        continue
    fi
    case $((i % 10)) in
        0|1) ffmpeg -v error -y -f lavfi -i "$src" -c:v libx265 -x265-params log-level=error:keyint=25 -pix_fmt yuv420p "$work/clips/c$i.mp4" ;;
        2) ffmpeg -v error -y -f lavfi -i "$src" -c:v libvpx-vp9 -g 25 -deadline realtime -cpu-used 8 "$work/clips/c$i.webm" ;;
        *) ffmpeg -v error -y -f lavfi -i "$src" -c:v libx264 -g 25 -bf 2 -pix_fmt yuv420p "$work/clips/c$i.mp4" ;;
    esac
done
k=0
for i in $(seq 0 $((n - 1))); do
    c=$(ls "$work/clips" | sed -n "$((i % distinct + 1))p")
    cp "$work/clips/$c" "$work/videos/v$(printf %05d "$i").${c##*.}"
done
du -sb "$work/videos" | tee "$out/size.txt"
port=9016
"$server" "$work/s3" "$port" test test > "$out/s3-server.log" 2>&1 &
spid=$!; trap 'kill $spid' EXIT
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
t0=$(date +%s.%N)
for f in "$work"/videos/*; do
    curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user test:test \
        -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -T "$f" \
        "http://127.0.0.1:$port/bench/videos/$(basename "$f")" > /dev/null
done
echo "uploaded $n videos in $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s" | tee "$out/upload.txt"
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 \
    AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true
for scan in ${SCANS:-keyframes none}; do
    for round in 1 2 3; do
        GM_BENCH_SCAN=$scan "$bin/gm-loader--remote_index" s3://bench/videos/ "$work/videos" \
            2>>"$out/err.txt" | tee -a "$out/remote_index.jsonl"
    done
done
