#!/bin/bash
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in 1 2 3; do for b in fused-22350fd fused-new fused-lb fused-lb-nocubic; do ./$b 2>&1 | grep -v colour | grep -v "device copy" | sed "s/^{/{\"build\":\"$b\",\"round\":$r,/"; done; done
M=gpu__time_duration.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active
for b in fused-new fused-lb; do timeout 120 ncu --kernel-name regex:'gm_fused_(bilinear|bicubic)' --launch-skip 5 --launch-count 2 --metrics $M --csv ./$b 2>/dev/null | grep -v '^==' | sed "s/^/$b,/"; done
for b in fused-lb fused-lb-nocubic; do timeout 120 ncu --kernel-name regex:'gm_fused_bicubic' --launch-count 3 --metrics $M --csv ./$b 2>/dev/null | grep -v '^==' | sed "s/^/$b,/"; done
