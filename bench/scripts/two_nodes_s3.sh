#!/usr/bin/env bash
# Issue 45, item 2: two torchrun nodes on one host (--nnodes=2 --nproc_per_node=2, meeting on
# loopback), each rank streaming its WebDataset shards from moto's S3 onto a GPU
# (bench/elastic/two_nodes_s3.py). Run from the repository root on the GPU machine with gm's
# wheel in target/wheels and moto's S3 (moto[s3] and its dependencies the machine lacks,
# unpacked) under S3SITE. IMAGES: JPEGs cycled into SHARDS shards of 48 samples. Writes the
# servers' and nodes' logs, each rank's samples and the check under $OUT/two.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
REPO=$PWD; S=$REPO/bench/elastic/two_nodes_s3.py; O=$OUT/two; mkdir -p "$O"
IMAGES=${IMAGES:-$REPO/assets/demo/images}; SHARDS=${SHARDS:-16}; S3SITE=${S3SITE:-/tmp/s3site}
[ -e /tmp/v/bin/python ] || { python3 -m venv /tmp/v && /tmp/v/bin/pip install -q --no-index --no-deps "$REPO"/target/wheels/*.whl \
  && python3 -c "import site; print(site.getsitepackages()[0])" > "$(/tmp/v/bin/python -c 'import site; print(site.getsitepackages()[0])')/torch.pth"; }
PYTHONPATH=$S3SITE setsid python3 "$S" serve "$O" "$IMAGES" "$SHARDS" > "$O/serve.txt" 2>&1 &
for _ in $(seq 60); do grep -q '^PORT' "$O/serve.txt" 2>/dev/null && break; sleep 1; done
PORT=$(awk '/^PORT/ {print $2}' "$O/serve.txt"); [ -n "$PORT" ] || { cat "$O/serve.txt"; exit 1; }
for k in 0 1; do
  OMP_NUM_THREADS=4 timeout 240 /tmp/v/bin/python -m torch.distributed.run --nnodes=2 --nproc_per_node=2 \
    --node_rank=$k --master_addr=127.0.0.1 --master_port=29533 "$S" train "$O" "$PORT" "$SHARDS" > "$O/node$k.log" 2>&1 &
done
wait $(jobs -p | tail -2)
/tmp/v/bin/python "$S" check "$O" "$SHARDS" 2>&1 | tee "$O/check.txt"
pkill -f "two_nodes_s3.py serve"
