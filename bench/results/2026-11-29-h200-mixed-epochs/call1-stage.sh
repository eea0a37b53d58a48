#!/usr/bin/env bash
# Stage the shared parts in /tmp/w (FFmpeg 7.1 from PyAV's wheel, perf, the bench videos).
set -u
H=$PWD/.hs/g91a; W=/tmp/w; mkdir -p $W/ff $W/perf
tar -xJf $H/avlibs.tar.xz -C $W/ff && tar -xJf $H/perf.tar.xz -C $W/perf && cp $H/*.mp4 $W/
cd $W/ff && ln -sf libavcodec-*.so.61.* libavcodec.so.61 && ln -sf libavutil-*.so.59.* libavutil.so.59 && ls -la $W/ff | head -5
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/env.txt; nproc | tee -a $OUT/env.txt; date -u | tee -a $OUT/env.txt
lscpu | grep -E "^(Thread|Core|Socket|Model name|L3)" | tee -a $OUT/env.txt
ldd --version | head -1 | tee -a $OUT/env.txt
cat /proc/sys/kernel/perf_event_paranoid 2>&1 | tee -a $OUT/env.txt
LD_LIBRARY_PATH=$W/perf/lib $W/perf/perf stat -e task-clock sleep 0.1 2>&1 | tail -4
LD_LIBRARY_PATH=$W/perf/lib $W/perf/perf record -F 99 -g -o /tmp/w/t.data sleep 0.2 2>&1 | tail -3
