#!/bin/bash
# GPU session, bench call: timm's recipe against the plain pipeline for gm, DALI and torchvision
# (bench/scripts/recipe_run.sh), then the accvlab multi-camera scene (six 1600x900 HEVC
# cameras, bench/data/make_scenes.sh) in the clip loader, beside the raw NVDEC rate of one of
# its cameras. Carried before: /tmp/parts (DALI), /tmp/imagenet, /tmp/scenes; /tmp/gb (tests call).
# Everything lands in /tmp/b and comes back as one archive (the device tool returns few files).
set -u
res="$OUT"; b=/tmp/b; mkdir -p $b/scenes
export BUNDLE=/tmp/gb IMAGES=/tmp/imagenet ROUNDS=${ROUNDS:-2}
OUT=$b bash bench/scripts/recipe_run.sh > $b/recipe.txt 2>&1
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
GM_BENCH_SCENES=1 GM_BENCH_COPIES=4 GM_BENCH_SESSIONS=1,4,7 GM_BENCH_REPS=3 GM_BENCH_RANDOM_BATCHES=30 \
    timeout 200 /tmp/gb/bench/gm-loader--clips /tmp/scenes/scene_cam*.mp4 > $b/scenes/clips.jsonl 2> $b/scenes/clips.err
timeout 120 /tmp/gb/bench/gm-codec--nvdec /tmp/scenes/scene_cam0.mp4 > $b/scenes/nvdec.jsonl 2> $b/scenes/nvdec.err
tar czf $res/bench.tgz -C /tmp b
cat $b/recipe/run.log; tail -3 $b/scenes/*.err; cat $b/recipe/gm.jsonl | cut -c1-200
