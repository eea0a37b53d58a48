#!/bin/sh
# Makes the WebDataset fixtures: two tars written by GNU tar (mixed.tar: a directory entry,
# a hidden file, a two-dot extension, a dotted directory, sizes of 0, 512 and odd; and
# long-names.tar: names past tar's 100 bytes, in GNU long-name records) and, as the reference,
# their indexes made by DALI's tools/wds2idx.py (NVIDIA/DALI commit
# 0aa2ef5f8c77c4339a0440e6e6684ce86e48e8ba, Apache-2.0; not carried here: give its path as
# WDS2IDX). gm-loader's test `our_index_equals_dali_wds2idx_output` compares gm's index to them.
#   WDS2IDX=/path/to/wds2idx.py sh make.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
: "${WDS2IDX:?path to DALI's tools/wds2idx.py}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
python3 - <<'PY'
import os, random
rng = random.Random(22)
def put(path, n):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(bytes(rng.randrange(256) for _ in range(n)))
def text(path, s):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        f.write(s)
put("m/cls/000.jpg", 1000); text("m/cls/000.cls", "7\n"); put("m/cls/000.seg.png", 513)
put("m/cls/.hidden", 3); put("m/cls/001.jpg", 512); text("m/cls/001.json", '{"label": 2}')
put("m/cls/002.txt", 0); put("m/x.y/003.jpg", 1537); put("m/004.jpg", 1)
long = "l/" + "d" * 120 + "/sample_with_a_rather_long_name_" + "k" * 40
put(long + ".jpg", 700); text(long + ".cls", "1")
put("l/short.jpg", 10); text("l/short.cls", "0")
PY
cd m
printf '%s\n' cls cls/000.jpg cls/000.cls cls/000.seg.png cls/.hidden cls/001.jpg \
    cls/001.json cls/002.txt x.y/003.jpg 004.jpg > ../list
tar --format=gnu --owner=0 --group=0 --numeric-owner --mtime=@0 --no-recursion \
    -cf "$here/mixed.tar" -T ../list
cd ../l
find . -type f | sed 's|^\./||' | sort > ../list
tar --format=gnu --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$here/long-names.tar" -T ../list
python3 "$WDS2IDX" "$here/mixed.tar" "$here/mixed.idx" > /dev/null
python3 "$WDS2IDX" "$here/long-names.tar" "$here/long-names.idx" > /dev/null
