#!/bin/bash
# Issue 22, 2026-11-24: streamed S3 shards, the read-ahead and growing-buffer change A/B.
# old = the pipeline bench of ddc8471 (8 pieces of read-ahead, buffer filled whole);
# new = 32 pieces of 1 MB read-ahead, bodies reserved whole, shuffle_initial 100;
# new-fill = new with GM_BENCH_SHUFFLE_INITIAL=1000 (the buffer filled whole, as old).
set -u
C=target/shards-carry; b=/tmp/b; mkdir -p $b
for x in gm s3-server; do unxz -c $C/$x.xz > $b/$x; done
for x in gm-loader--pipeline pipeline-old stream_read; do unxz -c $C/bench/$x.xz > $b/$x; done
chmod +x $b/*
out=$OUT/${SET:-ab}; mkdir -p $out
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
server_cpu() { awk '{print $14 + $15}' /proc/$s3pid/stat; }
local_list=$(ls $work/shards/*.tar | paste -sd, -)
s3_list=$(cd $work/shards && ls *.tar | sed 's#^#s3://bench/shards/#' | paste -sd, -)
cat $work/folder/c0/* $work/shards/* > /dev/null
export GM_BENCH_REPEAT=${REPEAT:-200} GM_BENCH_REPS=3 GM_BENCH_CONFIGS=4x2
row() {  # name, then env assignments and the binary
  local name=$1; shift
  local t0=$(date +%s.%N) c0=$(server_cpu)
  env "$@" $work/folder/c0 2>>$out/err.txt | grep '^{' | sed "s/^{/{\"variant\":\"$name\",/" >> $out/pipeline.jsonl
  echo "$name server_cores $(python3 -c "print(round(($(server_cpu) - $c0) / $(getconf CLK_TCK) / ($(date +%s.%N) - $t0), 2))")" >> $out/server.txt
}
for round in $(seq 1 ${ROUNDS:-2}); do
  echo "round $round $(date -u +%T)" >> $out/run.log
  if [ "${SET:-ab}" = more ]; then
    row folder timeout 120 $b/gm-loader--pipeline
    row local-new GM_BENCH_STREAM=1 GM_BENCH_SHARDS=$local_list timeout 150 $b/gm-loader--pipeline
    row s3-new GM_BENCH_STREAM=1 GM_BENCH_SHARDS=$s3_list timeout 150 $b/gm-loader--pipeline
  elif [ "${SET:-ab}" = ab ]; then
    row folder timeout 120 $b/gm-loader--pipeline
    row local-new GM_BENCH_STREAM=1 GM_BENCH_SHARDS=$local_list timeout 150 $b/gm-loader--pipeline
    row s3-old GM_BENCH_STREAM=1 GM_BENCH_SHARDS=$s3_list timeout 150 $b/pipeline-old
    row s3-new GM_BENCH_STREAM=1 GM_BENCH_SHARDS=$s3_list timeout 150 $b/gm-loader--pipeline
    row s3-new-fill GM_BENCH_STREAM=1 GM_BENCH_SHUFFLE_INITIAL=1000 GM_BENCH_SHARDS=$s3_list timeout 150 $b/gm-loader--pipeline
  else
    row folder timeout 120 $b/gm-loader--pipeline
    row local-new GM_BENCH_STREAM=1 GM_BENCH_SHARDS=$local_list timeout 150 $b/gm-loader--pipeline
    row s3-new GM_BENCH_STREAM=1 GM_BENCH_SHARDS=$s3_list timeout 150 $b/gm-loader--pipeline
    row s3-shuffle1 GM_BENCH_STREAM=1 GM_BENCH_SHUFFLE=1 GM_BENCH_SHARDS=$s3_list timeout 150 $b/gm-loader--pipeline
    row s3-shuffle100 GM_BENCH_STREAM=1 GM_BENCH_SHUFFLE=100 GM_BENCH_SHARDS=$s3_list timeout 150 $b/gm-loader--pipeline
    row s3-streams8 GM_BENCH_STREAM=1 GM_BENCH_STREAMS=8 GM_BENCH_SHARDS=$s3_list timeout 150 $b/gm-loader--pipeline
  fi
done
# The stream alone, nothing decoded: the rate a streamed Loader can reach at most.
pat=$(cd $work/shards && ls *.tar | head -1 | sed 's/000000/{000000..000003}/')
GM_BENCH_REPEAT=200 timeout 60 $b/stream_read "$work/shards/$pat" 3 > $out/stream_read.jsonl 2>>$out/err.txt
GM_BENCH_REPEAT=200 timeout 60 $b/stream_read "s3://bench/shards/$pat" 3 >> $out/stream_read.jsonl 2>>$out/err.txt
kill $s3pid
python3 - $out/pipeline.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["variant"], r["source"], r["img_per_s"], r["min"], r["max"], "wait_us", r["wait_us_per_batch"], "cores", r["cpu_cores"], "read_ms", r["ms_per_batch"]["read"])
PY
cat $out/server.txt $out/stream_read.jsonl
tail -5 $out/err.txt
