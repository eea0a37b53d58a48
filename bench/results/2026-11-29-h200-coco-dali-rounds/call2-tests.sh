#!/usr/bin/env bash
# Issues 42 and 44: the GPU tests of this tree: gm-loader video (the mixed dataset's CPU
# decoders at lower priority), coco and pipeline; gm-python's GPU, COCO and image loader
# tests with this tree's wheel. Sets up the venv and photos for the DALI call after.
set -u
REPO=$PWD; H=$REPO/.hs/g122
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } | tee "$OUT/env.txt"
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -e /tmp/w/ff/libavcodec.so.61 ]; then export GM_FFMPEG_DIR=/tmp/w/ff LD_LIBRARY_PATH=/tmp/w/ff:$LD_LIBRARY_PATH; echo "ffmpeg from call 1" | tee -a "$OUT/env.txt"; else echo "NO ffmpeg" | tee -a "$OUT/env.txt"; fi
mkdir -p /tmp/img /tmp/b /tmp/parts && tar -xf $H/imagenet.tar -C /tmp/img
for t in video coco pipeline; do xz -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
rm -rf /tmp/vcur; python3 -m venv /tmp/vcur && echo "$SP" > "$(/tmp/vcur/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/vcur/bin/pip install -q --no-index --no-deps $H/cur/*.whl 2>&1 | tail -2
export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
(cd crates/gm-loader && for t in video coco pipeline; do echo "== $t"; timeout 200 /tmp/b/$t 2>&1 | grep -E "^test result|FAILED|panicked|failed|CPU route" | head -20; done) 2>&1 | tee "$OUT/rust-tests.txt"
(cd crates/gm-python/tests && timeout 150 /tmp/vcur/bin/python -m pytest -q -p no:cacheprovider gpu/ test_coco.py -k "not nvdec_lacks" 2>&1 | tail -4) | tee "$OUT/py-tests.txt"
