#!/bin/bash
# Issue 22, 2026-11-24 (second run of the day): a parser thread per stream with 32 MB of
# parsed samples ahead, all started with the epoch (stream_parse.rs), against the feeder
# parsing every stream itself. old = main at 2f68648 with the bench's timeline; new = this
# commit. Same call, interleaved, ROUNDS
# rounds: the folder, local shards streamed and S3 shards streamed (s3s on loopback), then the
# stream alone (stream_read, nothing decoded), old and new.
set -u
C=target/stream-carry; b=/tmp/b; mkdir -p $b
for x in gm s3-server; do unxz -c $C/$x.xz > $b/$x; done
for x in pipeline-old pipeline-new stream_read-old stream_read-new; do unxz -c $C/bench/$x.xz > $b/$x; done
chmod +x $b/*
out=$OUT/stream; mkdir -p $out
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores: $(nproc)"; date -u; } > $out/env.txt
work=/tmp/gm-shards; rm -rf $work; mkdir -p $work/folder/c0 $work/shards
cp $C/imagenet/*.jpg $work/folder/c0/
$b/gm shard --from $work/folder --to $work/shards --size 4MB > $out/run.log 2>&1
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1 AWS_ALLOW_HTTP=true
s3root=/tmp/gm-s3s; rm -rf $s3root; mkdir -p $s3root/bench; port=9014
$b/s3-server $s3root $port test test > $out/s3-server.log 2>&1 & s3pid=$!
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
export AWS_ENDPOINT=http://127.0.0.1:$port AWS_ENDPOINT_URL=http://127.0.0.1:$port
$b/gm shard --from $work/folder --to s3://bench/shards --size 4MB >> $out/run.log 2>&1
local_list=$(ls $work/shards/*.tar | paste -sd, -)
s3_list=$(cd $work/shards && ls *.tar | sed 's#^#s3://bench/shards/#' | paste -sd, -)
cat $work/folder/c0/* $work/shards/* > /dev/null
export GM_BENCH_REPEAT=${REPEAT:-200} GM_BENCH_REPS=3 GM_BENCH_CONFIGS=4x2
row() {  # name, then env assignments and the binary
  local name=$1; shift
  env "$@" $work/folder/c0 2>>$out/err.txt | grep '^{' | sed "s/^{/{\"variant\":\"$name\",/" >> $out/pipeline.jsonl
}
pat=$(cd $work/shards && ls *.tar | head -1 | sed 's/000000/{000000..000003}/')
for round in $(seq 1 ${ROUNDS:-2}); do
  echo "round $round $(date -u +%T)" >> $out/run.log
  row folder timeout 120 $b/pipeline-new
  for v in old new; do
    row local-$v GM_BENCH_STREAM=1 GM_BENCH_SHARDS=$local_list timeout 150 $b/pipeline-$v
    row s3-$v GM_BENCH_STREAM=1 GM_BENCH_SHARDS=$s3_list timeout 150 $b/pipeline-$v
  done
  [ $round = 1 ] && for v in old new; do
    for src in "$work/shards/$pat" "s3://bench/shards/$pat"; do
      GM_BENCH_REPEAT=200 timeout 60 $b/stream_read-$v "$src" 3 2>>$out/err.txt \
        | sed "s/^{/{\"variant\":\"$v\",\"round\":$round,/" >> $out/stream_read.jsonl
    done
  done
done
kill $s3pid
python3 - $out/pipeline.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["variant"], r["img_per_s"], r["min"], r["max"], "wait_us", r["wait_us_per_batch"], "cores", r["cpu_cores"], "read_ms", r["ms_per_batch"]["read"], r.get("timeline_ms"))
PY
cat $out/stream_read.jsonl
tail -5 $out/err.txt
