#!/usr/bin/env bash
# Issue 44, paced NVDEC waits with in-order marking (a picture seen decoded marks its decoder's
# earlier pictures decoded): gm-codec's GPU tests, then its nvdec bench on H.264 (7 sessions
# sequential, random clips and single frames on a 7-session pool), paced against nvcuvid's waits.
set -u
REPO=$PWD; H=$REPO/.hs/g132;  # nvdec-bench.xz and nvdec.xz (this branch, bundle-release), avlibs.tar.xz
# (bench/data/ffmpeg_from_pyav_wheel.sh), bench_1080p_h264.mp4 (bench/data/make_videos.sh)
 W=/tmp/w; mkdir -p $W/ff /tmp/b
tar -xJf $H/avlibs.tar.xz -C $W/ff && cp $H/*.mp4 $W/
for t in nvdec-bench nvdec; do xz -dc $H/$t.xz > /tmp/b/$t && chmod +x /tmp/b/$t; done
(cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59)
export GM_FFMPEG_DIR=$W/ff LD_LIBRARY_PATH=$W/ff${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u; uname -r; grep -m1 "model name" /proc/cpuinfo; } > $OUT/env.txt
(export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
 cd $REPO/crates/gm-codec && echo "== nvdec" && timeout 60 /tmp/b/nvdec 2>&1 | grep -E "^test |^test result|panicked|failed" | tail -40) > $OUT/tests.txt 2>&1
grep -E "^==|test result|FAIL|panick" $OUT/tests.txt
export GM_BENCH_SESSIONS=7
nb() { echo "== $1 $(date +%T)" >> $OUT/nvdec-bench.txt; timeout 40 /tmp/b/nvdec-bench $W/bench_1080p_h264.mp4 2>&1 | grep '^{' | sed "s/^{/{\"tag\":\"$1\",/" >> $OUT/nvdec-bench.jsonl; }
sum() { python3 - $OUT/nvdec-bench.jsonl <<'PY'
import json,sys,collections
r=collections.defaultdict(list)
for j in map(json.loads, open(sys.argv[1])):
    r[(j['workload'], j.get('sessions'))].append((j['tag'], j.get('fps', j.get('ms'))))
for k,v in r.items(): print(*k, v)
PY
}
nb paced; GM_NVDEC_WAIT=nvcuvid nb nvcuvid; nb paced; GM_NVDEC_WAIT=nvcuvid nb nvcuvid; sum > $OUT/nvdec-summary.txt
nb paced; GM_NVDEC_WAIT=nvcuvid nb nvcuvid; sum > $OUT/nvdec-summary.txt; cat $OUT/nvdec-summary.txt
