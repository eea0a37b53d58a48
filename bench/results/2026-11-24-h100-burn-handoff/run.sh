#!/bin/bash
# Issue 19: burn's device copy, old (a stream per call) against new (a stream per thread), and
# the cubecl calls it is made of; then the burn CUDA interop tests on the new code.
set -u
C=target/burn-carry; out=$OUT/burn; mkdir -p $out /tmp/fw
for b in handoff handoff-old interop_gpu; do unxz -c $C/$b.xz > /tmp/fw/$b; chmod +x /tmp/fw/$b; done
libs=$(python3 -c 'import glob, os, site
dirs = {os.path.dirname(p) for s in site.getsitepackages()
        for p in glob.glob(s + "/nvidia/**/lib*.so*", recursive=True)}
print(":".join(sorted(dirs)))')
export LD_LIBRARY_PATH=$libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export GM_REQUIRE_GPU=1
for r in 1 2; do
  for v in handoff-old handoff; do
    echo "== $v round $r" >> $out/handoff.log
    timeout 120 /tmp/fw/$v --burn-only --batches 40 >> $out/handoff.log 2>&1
  done
done
timeout 300 /tmp/fw/interop_gpu --test-threads=1 > $out/interop_gpu.log 2>&1; echo "interop_gpu rc=$?" >> $out/interop_gpu.log
cat $out/handoff.log; tail -15 $out/interop_gpu.log
