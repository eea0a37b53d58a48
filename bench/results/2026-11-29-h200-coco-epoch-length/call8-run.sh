#!/usr/bin/env bash
# gm-loader GPU pipeline and shutdown tests of new2; the FFmpeg CPU-route python test with
# PyAV 13.1's libraries (the machine has no FFmpeg).
set -u
REPO=$PWD; H=$REPO/.hs/g111b
NVJ=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libnvjpeg.so.13*' 2>/dev/null | head -n 1)")
export LD_LIBRARY_PATH="$NVJ${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
mkdir -p /tmp/b && xz -dc $H/g111av.tar.xz | tar xf - -C /tmp
for t in pipeline shutdown; do
  xz -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t
  echo "== $t" | tee -a "$OUT/tests.txt"
  (cd crates/gm-loader && timeout 300 /tmp/b/$t 2>&1) | grep -E "^test |^test result|FAILED|panicked|SKIP" | tee -a "$OUT/tests.txt"
done
(cd crates/gm-python/tests && GM_FFMPEG_DIR=/tmp/avtest timeout 200 /tmp/vnew2/bin/python -m pytest -q -p no:cacheprovider gpu/test_torch.py -k "nvdec_lacks" 2>&1 | tail -4) | tee -a "$OUT/tests.txt"
