#!/usr/bin/env bash
# Stage gm's wheels (old 805ea60, cur) and the photos for the DALI call.
set -u
G=$PWD/.hs/g102
mkdir -p /tmp/img && tar -xf $G/imagenet.tar -C /tmp/img
SP=$(python3 -c 'import site; print(site.getsitepackages()[0])')
for v in old cur; do rm -rf /tmp/v$v; python3 -m venv /tmp/v$v && echo "$SP" > "$(/tmp/v$v/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"; done
/tmp/vold/bin/pip install -q --no-index --no-deps $G/old/*.whl 2>&1 | tail -2
/tmp/vcur/bin/pip install -q --no-index --no-deps $G/whl/*.whl 2>&1 | tail -2
/tmp/vcur/bin/python -c "import gm; print('ok')"; ls /tmp/img/imagenet | wc -l
