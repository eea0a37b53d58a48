#!/bin/bash
# Plain-path regression forensics: SASS and ncu metrics of gm_fused_bilinear, old vs new.
set -x
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
for v in old new; do
  grep -v '^//' $v.ptx > /tmp/$v.ptx
  ptxas -arch=sm_90 -O3 -v /tmp/$v.ptx -o /tmp/$v.cubin > $OUT/ptxas-$v.txt 2>&1
  cuobjdump -sass -fun gm_fused_bilinear /tmp/$v.cubin > /tmp/sass-$v.txt 2>&1
  sed -E 's@/\*[0-9a-f]{4}\*/@@; s@/\* 0x[0-9a-f]+ \*/@@; s@c\[0x0\]\[0x[0-9a-f]+\]@c[P]@g' /tmp/sass-$v.txt | sed -E 's/0x[0-9a-f]+/X/g' > /tmp/norm-$v.txt
done
wc -l /tmp/sass-*.txt > $OUT/sass-diff.txt
diff /tmp/norm-old.txt /tmp/norm-new.txt >> $OUT/sass-diff.txt
diff <(grep -A3000 'gm_fused_bilinear' /tmp/sass-old.txt) <(grep -A3000 'gm_fused_bilinear' /tmp/sass-new.txt) | head -400 > $OUT/sass-rawdiff.txt
M=gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors.sum,lts__t_sector_hit_rate.pct,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__shared_mem_per_block_static,launch__occupancy_limit_registers,sm__cycles_elapsed.avg,smsp__cycles_active.avg,launch__grid_size,launch__block_size,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__average_warp_latency_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_barrier
for b in fused-22350fd fused-new; do
  timeout 240 ncu --kernel-name regex:gm_fused_bilinear --launch-skip 5 --launch-count 6 --metrics $M --csv ./$b > $OUT/ncu-$b.csv 2> $OUT/ncu-$b.err
done
for b in fused-22350fd fused-new fused-22350fd fused-new; do ./$b 2>&1 | grep -v colour; done > $OUT/plain-times.txt
