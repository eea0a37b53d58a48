#!/usr/bin/env bash
# Issue 22's performance targets: the image pipeline from WebDataset shards against the same
# images in a folder, on local disk and from an S3 server on loopback (moto, as the tests use),
# in one call on one GPU. Needs: BIN (a folder with gm-loader--pipeline and gm from the GPU
# bundle), IMAGES (bench/data/make_jpeg_sets.sh's imagenet set), and the test servers' venv
# (bench/scripts/gpu_test_servers.sh WHEELS, run once on the machine before). Shards of about
# SHARD_SIZE (4MB) are written by `gm shard`; each source is listed REPEAT (50) times; ROUNDS
# (2) interleaved rounds of folder, local shards, S3 shards. Results: $OUT/shards/*.jsonl.
set -u
root="$(pwd)"
out="${OUT:-/tmp/out}/shards"; mkdir -p "$out"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$out/run.log"; }
bin="${BIN:?folder with gm-loader--pipeline and gm}"
img="${IMAGES:?the imagenet JPEG set}"
venv=/tmp/gm-test-servers
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores: $(nproc)"; date -u; } \
    | tee "$out/env.txt"
work=/tmp/gm-shards; rm -rf "$work"; mkdir -p "$work/folder/c0" "$work/shards"
cp "$img"/*.jpg "$work/folder/c0/"
"$bin/gm" shard --from "$work/folder" --to "$work/shards" --size "${SHARD_SIZE:-4MB}" >> "$out/run.log" 2>&1
ls -l "$work/shards" >> "$out/run.log"
# The S3 server and a bucket holding the shards and their indexes.
coproc MOTO { "$venv/bin/python" "$root/xtask/servers/moto_s3.py"; }
read -r _ port <&"${MOTO[0]}"
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1 \
    AWS_REGION=us-east-1 AWS_ENDPOINT="http://127.0.0.1:$port" AWS_ENDPOINT_URL="http://127.0.0.1:$port" \
    AWS_ALLOW_HTTP=true
"$venv/bin/python" - "$work/shards" <<'PY' >> "$out/run.log" 2>&1
import os, sys, boto3
s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
s3.create_bucket(Bucket="bench")
for f in sorted(os.listdir(sys.argv[1])):
    s3.upload_file(os.path.join(sys.argv[1], f), "bench", "shards/" + f)
print("uploaded", len(os.listdir(sys.argv[1])), "files")
PY
local_list=$(ls "$work"/shards/*.tar | paste -sd, -)
s3_list=$(cd "$work/shards" && ls *.tar | sed 's#^#s3://bench/shards/#' | paste -sd, -)
cat "$work"/folder/c0/* "$work"/shards/* > /dev/null
export GM_BENCH_REPEAT="${REPEAT:-50}" GM_BENCH_REPS="${REPS:-3}" GM_BENCH_CONFIGS="${CONFIGS:-4x2}"
for round in $(seq 1 "${ROUNDS:-2}"); do
    log "round $round: folder"
    timeout 120 "$bin/gm-loader--pipeline" "$work/folder/c0" 2>>"$out/err.txt" | grep '^{' >> "$out/pipeline.jsonl"
    log "round $round: local shards"
    GM_BENCH_SHARDS="$local_list" timeout 120 "$bin/gm-loader--pipeline" "$work/folder/c0" \
        2>>"$out/err.txt" | grep '^{' >> "$out/pipeline.jsonl"
    log "round $round: S3 shards"
    GM_BENCH_SHARDS="$s3_list" timeout 180 "$bin/gm-loader--pipeline" "$work/folder/c0" \
        2>>"$out/err.txt" | grep '^{' >> "$out/pipeline.jsonl"
done
du -sb "$work/folder/c0" "$work/shards" >> "$out/run.log"
log done
