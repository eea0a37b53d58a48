#!/usr/bin/env bash
# Issue 45, item 2: ResNet-50 AMP under torchrun, one rank per GPU (NPROC), gm.ImageLoader against
# torchvision's DataLoader and NVIDIA DALI's pipeline (examples/python/train_resnet.py, DDP).
# Run from the repository root on the GPU machine with gm's wheel in target/wheels and IMAGES a
# folder of JPEGs (bench/data/make_jpeg_sets.sh's imagenet/), linked 100 times each into four
# class folders. LOADERS (default "gm torchvision dali") picks the runs, STEPS (default 200) their
# length; DALI, unpacked at /tmp/dali by another script, is put on PYTHONPATH for the dali run
# only, with DALI_THREADS (default 12) CPU threads per process.
set -u
# NVLink multicast (NVLS, symmetric memory) stays off on these machines.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
REPO=$PWD
IMAGES=${IMAGES:-$REPO/.hs/imagenet}
LOADERS=${LOADERS:-gm torchvision dali}
STEPS=${STEPS:-200}
DALI_THREADS=${DALI_THREADS:-12}
NPROC=${NPROC:-$(nvidia-smi -L | wc -l)}  # one rank per GPU
python3 -m venv /tmp/v && /tmp/v/bin/pip install -q --no-index --no-deps "$REPO"/target/wheels/*.whl
python3 -c "import site; print(site.getsitepackages()[0])" > "$(/tmp/v/bin/python -c 'import site; print(site.getsitepackages()[0])')/torch.pth"
D=/tmp/rn; rm -rf $D; for c in 0 1 2 3; do mkdir -p $D/c$c; done
i=0; for f in "$IMAGES"/*.jpg; do for k in $(seq 0 99); do ln -s "$f" "$D/c$((i % 4))/${k}_$(basename "$f")"; done; i=$((i+1)); done
cat "$IMAGES"/* > /dev/null
nvidia-smi --query-gpu=index,name --format=csv,noheader > "$OUT/env.txt"; nproc >> "$OUT/env.txt"
for loader in $LOADERS; do
  echo "== $loader" | tee -a "$OUT/summary.txt"
  extra=; workers=16  # torchvision's DataLoader workers (gm ignores --workers)
  if [ "$loader" = dali ]; then
    extra=PYTHONPATH=/tmp/dali${PYTHONPATH:+:$PYTHONPATH}; workers=$DALI_THREADS
  fi
  env $extra OMP_NUM_THREADS=4 timeout 280 /tmp/v/bin/python -m torch.distributed.run --nproc_per_node="$NPROC" \
    "$REPO/examples/python/train_resnet.py" --arch resnet50 --data $D --batch 256 --steps "$STEPS" \
    --loader "$loader" --workers "$workers" > "$OUT/$loader.log" 2>&1
  rc=$?; echo "rc=$rc" >> "$OUT/summary.txt"
  grep -E "images/s|loss .* ->|batches per epoch" "$OUT/$loader.log" | tee -a "$OUT/summary.txt"
  [ $rc = 0 ] || tail -n 3 "$OUT/$loader.log" | tee -a "$OUT/summary.txt"  # why it failed (DALI missing, say)
done
