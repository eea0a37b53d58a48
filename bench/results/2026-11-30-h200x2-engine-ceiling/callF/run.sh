#!/usr/bin/env bash
# Call F: the Python package's GPU tests on this commit's wheel (the loader's split drawn by name).
set -u
REPO=$PWD; H=$REPO/.hs/gF
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
mkdir -p /tmp/site && tar -xJf $H/whl.tar.xz -C /tmp/site
python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__)'
(cd crates/gm-python/tests && GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1 PYTHONPATH=/tmp/site timeout 400 \
   python3 -m pytest -q -p no:cacheprovider --durations=5 gpu 2>&1 | tail -25) | tee $OUT/tests.txt
