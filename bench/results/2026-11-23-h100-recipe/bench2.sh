#!/bin/bash
# GPU session, second bench call (after DALI's erase took no float16 in the first): the blur
# GPU tests with their fixed comparisons, timm's recipe against the plain pipeline for gm and
# DALI (gm at its default decoder settings), and the multi-camera scene with 16 copies (the
# first run's 4 copies gave stream access too few jobs for 7 sessions). Carried: target/gpu2
# (the two loader benches, blur_gpu, imagenet/, scenes/); /tmp/parts (DALI) from earlier calls.
set -u
root="$(pwd)"; res="$OUT"; b=/tmp/b2; mkdir -p $b/scenes /tmp/gb2/bench
g=$root/target/gpu2
cp $g/gm-loader--pipeline $g/gm-loader--clips /tmp/gb2/bench/
GM_REQUIRE_GPU=1 GM_FIXTURES=$root/tests/media $g/blur_gpu --test-threads=1 > $b/blur_gpu.txt 2>&1
echo "blur_gpu rc=$?" >> $b/blur_gpu.txt
tail -4 $b/blur_gpu.txt
BUNDLE=/tmp/gb2 IMAGES=$g/imagenet ROUNDS=2 SKIP_PEERS_GPU=1 OUT=$b bash bench/scripts/recipe_run.sh > $b/recipe.txt 2>&1
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
GM_BENCH_SCENES=1 GM_BENCH_COPIES=16 GM_BENCH_SESSIONS=7 GM_BENCH_REPS=3 GM_BENCH_RANDOM_BATCHES=30 \
    timeout 200 /tmp/gb2/bench/gm-loader--clips $g/scenes/scene_cam*.mp4 > $b/scenes/clips.jsonl 2> $b/scenes/clips.err
tar czf $res/bench2.tgz -C /tmp b2
cat $b/recipe/run.log; cut -c1-160 $b/recipe/gm.jsonl $b/recipe/dali.jsonl; cut -c1-200 $b/scenes/clips.jsonl
