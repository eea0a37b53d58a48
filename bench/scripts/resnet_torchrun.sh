#!/usr/bin/env bash
# Issue 45, item 2: ResNet-50 AMP under torchrun on 4 GPUs, gm.ImageLoader against
# torchvision's DataLoader (examples/python/train_resnet.py, DDP). Run from the repository
# root on the GPU machine with gm's wheel in target/wheels and IMAGES a folder of JPEGs
# (bench/data/make_jpeg_sets.sh's imagenet/), linked 100 times each into four class folders.
set -u
REPO=$PWD
IMAGES=${IMAGES:-$REPO/.hs/imagenet}
python3 -m venv /tmp/v && /tmp/v/bin/pip install -q --no-index --no-deps "$REPO"/target/wheels/*.whl
python3 -c "import site; print(site.getsitepackages()[0])" > "$(/tmp/v/bin/python -c 'import site; print(site.getsitepackages()[0])')/torch.pth"
D=/tmp/rn; rm -rf $D; for c in 0 1 2 3; do mkdir -p $D/c$c; done
i=0; for f in "$IMAGES"/*.jpg; do for k in $(seq 0 99); do ln -s "$f" "$D/c$((i % 4))/${k}_$(basename "$f")"; done; i=$((i+1)); done
cat "$IMAGES"/* > /dev/null
nvidia-smi --query-gpu=index,name --format=csv,noheader > "$OUT/env.txt"; nproc >> "$OUT/env.txt"
for loader in gm torchvision; do
  echo "== $loader" | tee -a "$OUT/summary.txt"
  OMP_NUM_THREADS=4 timeout 280 /tmp/v/bin/python -m torch.distributed.run --nproc_per_node=4 \
    "$REPO/examples/python/train_resnet.py" --arch resnet50 --data $D --batch 256 --steps 200 \
    --loader $loader --workers 16 > "$OUT/$loader.log" 2>&1
  echo "rc=$?" >> "$OUT/summary.txt"
  grep -E "images/s|loss .* ->|batches per epoch" "$OUT/$loader.log" | tee -a "$OUT/summary.txt"
done
