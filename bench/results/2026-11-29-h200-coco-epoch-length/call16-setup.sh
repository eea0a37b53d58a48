#!/usr/bin/env bash
# Issue 42: venv with new2 and pycocotools (torchvision's CocoDetection needs it), photos.
set -u
REPO=$PWD; H=$REPO/.hs/g112a
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } | tee "$OUT/env.txt"
mkdir -p /tmp/img /tmp/parts && tar -xf $H/imagenet.tar -C /tmp/img
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
rm -rf /tmp/vnew2; python3 -m venv /tmp/vnew2 && echo "$SP" > "$(/tmp/vnew2/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/vnew2/bin/pip install -q --no-index --no-deps $H/new2/*.whl 2>&1 | tail -2
/tmp/vnew2/bin/python -c 'import pycocotools' 2>/dev/null && echo "pycocotools on the machine" || /tmp/vnew2/bin/pip install -q --no-index --no-deps $H/pycocotools-*.whl 2>&1 | tail -2
/tmp/vnew2/bin/python -c 'import pycocotools, torchvision, gm; print("pycocotools", pycocotools.__version__ if hasattr(pycocotools, "__version__") else "?", "torchvision", torchvision.__version__)' | tee -a "$OUT/env.txt"
cp $REPO/.hs/d1/dali.tar.xz.* /tmp/parts/ 2>/dev/null; ls /tmp/parts
