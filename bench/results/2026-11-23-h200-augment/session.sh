#!/bin/bash
# GPU session: the whole bundle's tests, then the transform benches and the torch peer rows.
set -u
root="$(pwd)"
cd target/gpu-bundle
[ -d tests ] || tar -xJf tests.tar.xz
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
GM_LOG_DIR=/tmp/logs ./run.sh > $OUT/gpu-bundle.txt 2>&1
echo "run.sh rc=$?" >> $OUT/gpu-bundle.txt
ls bench > $OUT/benches.txt
for r in 1 2; do
  for b in bench/*transforms*fused* bench/*transforms*batch_ops*; do
    timeout 120 "$b" 2>>$OUT/bench.err | sed "s/^{/{\"bench\":\"$(basename $b)\",\"round\":$r,/" >> $OUT/bench.jsonl
  done
done
timeout 240 python3 "$root/bench/peers/torch_transforms_bench.py" > $OUT/torch.jsonl 2> $OUT/torch.err
tar czf $OUT/logs.tgz -C /tmp logs
