#!/usr/bin/env bash
# Issue 22's performance targets: the image pipeline from WebDataset shards against the same
# images in a folder, on local disk and from an S3 server on loopback (bench/s3-server with
# S3_SERVER, else moto, as the tests use), in one call on one GPU. Needs: BIN (a folder with
# gm-loader--pipeline and gm from the GPU bundle), IMAGES (bench/data/make_jpeg_sets.sh's
# imagenet set), and S3_SERVER or the test servers' venv (bench/scripts/gpu_test_servers.sh
# WHEELS, run once on the machine before). Shards of about
# SHARD_SIZE (4MB) are written by `gm shard`; each source is listed REPEAT (50) times; ROUNDS
# (2) interleaved rounds of folder, local shards, S3 shards, and (STREAM=1, the default) local
# and S3 shards read as streams (GM_BENCH_STREAMS, GM_BENCH_SHUFFLE). Results:
# $OUT/shards/*.jsonl.
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
# The S3 server and a bucket holding the shards and their indexes: S3_SERVER, the binary of
# bench/s3-server (s3s-fs's store over a folder, with TCP_NODELAY: s3s-fs's own binary stalls
# every kept-alive GET about 40 ms), the shards uploaded by `gm shard --to s3://...` itself;
# or else moto (the tests' server, Python) with boto3's upload.
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1 \
    AWS_REGION=us-east-1 AWS_ALLOW_HTTP=true
if [ -n "${S3_SERVER:-}" ]; then
    s3root=/tmp/gm-s3s; rm -rf "$s3root"; mkdir -p "$s3root/bench"
    port=9014
    "$S3_SERVER" "$s3root" "$port" test test > "$out/s3-server.log" 2>&1 &
    s3pid=$!
    for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    export AWS_ENDPOINT="http://127.0.0.1:$port" AWS_ENDPOINT_URL="http://127.0.0.1:$port"
    log "S3 server on port $port: gm shard --to s3://bench/shards"
    "$bin/gm" shard --from "$work/folder" --to s3://bench/shards --size "${SHARD_SIZE:-4MB}" \
        >> "$out/run.log" 2>&1
    ls -l "$s3root/bench/shards" >> "$out/run.log"
else
    coproc MOTO { "$venv/bin/python" "$root/xtask/servers/moto_s3.py"; }
    read -r _ port <&"${MOTO[0]}"
    export AWS_ENDPOINT="http://127.0.0.1:$port" AWS_ENDPOINT_URL="http://127.0.0.1:$port"
    "$venv/bin/python" - "$work/shards" <<'PY' >> "$out/run.log" 2>&1
import os, sys, boto3
s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
s3.create_bucket(Bucket="bench")
for f in sorted(os.listdir(sys.argv[1])):
    s3.upload_file(os.path.join(sys.argv[1], f), "bench", "shards/" + f)
print("uploaded", len(os.listdir(sys.argv[1])), "files")
PY
fi
# utime + stime of the S3 server, in clock ticks.
server_cpu() { [ -n "${s3pid:-}" ] && awk '{print $14 + $15}' "/proc/$s3pid/stat" || echo 0; }
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
    t0=$(date +%s.%N); c0=$(server_cpu)
    # S3_PROCS (1) pipelines at once, to tell the server's limit from one client's.
    pids=()
    for _ in $(seq 1 "${S3_PROCS:-1}"); do
        GM_BENCH_SHARDS="$s3_list" timeout 180 "$bin/gm-loader--pipeline" "$work/folder/c0" \
            2>>"$out/err.txt" | grep '^{' >> "$out/pipeline.jsonl" &
        pids+=($!)
    done
    wait "${pids[@]}"
    # The S3 server's own CPU over the run (cores), to tell its limit from gm's.
    [ -n "${s3pid:-}" ] && log "S3 server: $(python3 -c "print(round(($(server_cpu) - $c0) / $(getconf CLK_TCK) / ($(date +%s.%N) - $t0), 2))") cores"
    # Streaming mode (no index: each shard read front to back, one GET per 8 MB).
    if [ "${STREAM:-1}" = 1 ]; then
        log "round $round: local shards streamed"
        GM_BENCH_STREAM=1 GM_BENCH_SHARDS="$local_list" timeout 180 "$bin/gm-loader--pipeline" \
            "$work/folder/c0" 2>>"$out/err.txt" | grep '^{' >> "$out/pipeline.jsonl"
        log "round $round: S3 shards streamed"
        t0=$(date +%s.%N); c0=$(server_cpu)
        GM_BENCH_STREAM=1 GM_BENCH_SHARDS="$s3_list" timeout 180 "$bin/gm-loader--pipeline" \
            "$work/folder/c0" 2>>"$out/err.txt" | grep '^{' >> "$out/pipeline.jsonl"
        [ -n "${s3pid:-}" ] && log "S3 server (streamed): $(python3 -c "print(round(($(server_cpu) - $c0) / $(getconf CLK_TCK) / ($(date +%s.%N) - $t0), 2))") cores"
    fi
done
du -sb "$work/folder/c0" "$work/shards" >> "$out/run.log"
[ -n "${s3pid:-}" ] && kill "$s3pid"
log done
