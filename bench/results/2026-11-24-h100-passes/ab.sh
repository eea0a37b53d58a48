#!/bin/bash
# Issue 23, 2026-11-24: the cost of cutting chains into passes, old (one pass: a warp after
# RandomResizedCrop sampled the source once) against new (the warp reads the resized u8 image,
# a second pass) in the same call: the fused-kernel bench (its RandomAffine and
# TrivialAugmentWide workloads after crop+resize+flip) and the image pipeline bench on timm's
# recipe (RRC 224, flip, TrivialAugmentWide, normalize f16, RandomErasing 0.25) and the plain
# one, interleaved, ROUNDS rounds.
set -u
C=target/passes-carry; b=/tmp/b; mkdir -p $b
for x in pipeline-old pipeline-new fused-old fused-new; do unxz -c $C/bench/$x.xz > $b/$x; done
chmod +x $b/*
out=$OUT/ab; mkdir -p $out
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores: $(nproc)"; date -u; } > $out/env.txt
cat $C/imagenet/* > /dev/null
for round in $(seq 1 ${ROUNDS:-2}); do
  echo "round $round $(date -u +%T)" >> $out/run.log
  for v in old new; do
    timeout 100 $b/fused-$v 2>>$out/err.txt | grep '^{' | sed "s/^{/{\"variant\":\"$v\",\"round\":$round,/" >> $out/fused.jsonl
  done
  for recipe in timm plain; do
    for v in old new; do
      GM_BENCH_RECIPE=$recipe GM_BENCH_REPEAT=${REPEAT:-50} GM_BENCH_REPS=5 GM_BENCH_CONFIGS=4x3 \
        timeout 150 $b/pipeline-$v $C/imagenet 2>>$out/err.txt | grep '^{' \
        | sed "s/^{/{\"variant\":\"$v\",\"round\":$round,/" >> $out/pipeline.jsonl
    done
  done
done
echo "done $(date -u +%T)" >> $out/run.log
