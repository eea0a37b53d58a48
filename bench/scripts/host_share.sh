#!/usr/bin/env bash
# Issue 45, item 1: where one image loader per GPU loses rate against one alone on a
# multi-GPU host. Layout: a folder holding this script, host_probe.py, gm-loader--pipeline
# (target/gpu-bundle/bench) and imagenet/ (bench/data/make_jpeg_sets.sh), carried to the GPU
# machine. Writes env.txt (CPUs, NUMA, GPU topology), probe.jsonl (compute and copy rates per
# process at 1-64 busy processes), pipeline.jsonl (one record per loader process, "run" naming
# the experiment), phases.txt and mhz.txt (the CPUs' reported clock each second) under $OUT.
#
# EXPERIMENTS (each loader at LOCAL_WORLD_SIZE=4's default budget unless named):
#   alone / two / four:     1, 2 and 4 loaders at once, one per GPU;
#   spinN:                  one loader beside N processes spinning on the CPU (no GPU, no I/O):
#                           what sharing the cores alone costs;
#   copyN:                  one loader beside N processes copying memory: what sharing the
#                           memory system costs;
#   taskset, four-taskset:  alone and four confined to disjoint quarters of the CPUs;
#   cN:                     core budget N per loader, alone and four at once.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${OUT:-$here/out}"; mkdir -p "$out"
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
ngpu=$(nvidia-smi -L | wc -l)
{
    date -u; uname -a; nproc; lscpu; echo; numactl -H 2>&1; echo
    grep -i allowed /proc/self/status
    echo "siblings of cpu0: $(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list 2>&1)"
    grep MHz /proc/cpuinfo | sort | uniq -c | head -5
    head -3 /proc/meminfo
    nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
    nvidia-smi topo -m
} > "$out/env.txt" 2>&1
cat "$here"/imagenet/* > /dev/null   # page cache

[ "${PROBE:-1}" = 0 ] ||
    python3 "$here/host_probe.py" 1 8 16 32 48 64 --seconds 2 > "$out/probe.jsonl" 2> "$out/probe.err"

(while :; do
    awk -v t="$(date +%s)" '/MHz/ {s += $4; n++} END {if (n) printf "%s %.0f\n", t, s / n}' /proc/cpuinfo
    sleep 1
done) > "$out/mhz.txt" &
sampler=$!

export LOCAL_WORLD_SIZE=${LOCAL_WORLD_SIZE:-4} GM_BENCH_CORES=${GM_BENCH_CORES:-auto} GM_BENCH_CONFIGS=${GM_BENCH_CONFIGS:-4x3} GM_BENCH_REPS=5
export GM_BENCH_REPEAT=${REPEAT:-250}
# pl LABEL DEVICE [PREFIX...]: one loader process on DEVICE, its record tagged LABEL.
# With OWN_FILES=1 each GPU's loader reads its own copy of the images (imagenet-gpuN), as the
# ranks of a training job read different files, instead of all sharing the same page cache.
pl() {
    local label=$1 dev=$2; shift 2
    local images="$here/imagenet"
    if [ "${OWN_FILES:-0}" = 1 ]; then
        images="$here/imagenet-gpu$dev"
        [ -d "$images" ] || { cp -r "$here/imagenet" "$images"; cat "$images"/* > /dev/null; }
    fi
    GM_BENCH_DEVICE=$dev timeout ${RUN_TIMEOUT:-60} "$@" "$here/gm-loader--pipeline" "$images" \
        2>> "$out/err.txt" | sed "s/^{/{\"run\":\"$label\",/" >> "$out/pipeline.jsonl"
}
phase() { echo "$(date +%s) $1" >> "$out/phases.txt"; echo "# $1"; }
all() { # all LABEL N [PREFIX...]: N loaders at once, one per GPU
    local label=$1 n=$2; shift 2
    local pids=()
    for d in $(seq 0 $((n - 1))); do pl "$label" "$d" "$@" & pids+=($!); done
    wait "${pids[@]}"
}
quarter() { echo "$(($1 * $(nproc) / 4))-$((($1 + 1) * $(nproc) / 4 - 1))"; }

spin() { # spin N LABEL: one loader on GPU 0 beside N processes spinning on the CPU
    local ps=(); for _ in $(seq "$1"); do python3 -c 'while True: pass' & ps+=($!); done
    sleep 1; pl "$2" 0; kill "${ps[@]}" 2>/dev/null; wait "${ps[@]}" 2>/dev/null
}
copiers() { # copiers N LABEL: one loader on GPU 0 beside N processes copying memory
    local ps=()
    for _ in $(seq "$1"); do
        python3 "$here/host_probe.py" 1 --seconds 3600 --only copy > /dev/null 2>&1 & ps+=($!)
    done
    sleep 2; pl "$2" 0; kill "${ps[@]}" 2>/dev/null; pkill -f "seconds 3600 --only copy"
    wait "${ps[@]}" 2>/dev/null
}
for x in ${EXPERIMENTS:-alone two four spin10 spin30 spin48 copy12 taskset four-taskset c8 c12}; do
    phase "$x"
    case $x in
        alone) pl alone 0 ;;
        two) all two 2 ;;
        four) all four "$ngpu" ;;
        spin*) spin "${x#spin}" "alone+$x" ;;
        copy*) copiers "${x#copy}" "alone+$x" ;;
        taskset) pl alone-taskset 0 taskset -c "$(quarter 0)" ;;
        four-taskset)
            pids=()
            for d in $(seq 0 $((ngpu - 1))); do
                pl four-taskset "$d" taskset -c "$(quarter "$d")" & pids+=($!)
            done
            wait "${pids[@]}" ;;
        c*) GM_BENCH_CORES=${x#c} pl "alone-$x" 0; GM_BENCH_CORES=${x#c} all "four-$x" "$ngpu" ;;
    esac
done
kill $sampler
phase done
