#!/usr/bin/env bash
# The Python package against the Rust bench, DALI and PyNvVideoCodec, one after the other in
# one call on one GPU. Layout (carried to the GPU machine; see bench/results/*-python/):
#   DIR/python_run.sh (this), python_package_bench.py and loader_pipeline_peers.py
#     (bench/peers), gm-loader--pipeline (the Rust bench, release), imagenet/
#     (bench/data/make_jpeg_sets.sh), bench_1080p_h264.mp4 with its ffmpeg framemd5
#     (bench/data/make_videos.sh), whl/ (gm's wheel, PyNvVideoCodec's and torchcodec's);
#   DALI as xz'd tar chunks dali.tar.xz.NN and FFmpeg's shared libraries (torchcodec loads
#   them; the machine has none) as ff.tar.xz.NN, anywhere under DIR/.. or /tmp/parts
#   (carried over several calls).
# Env: ROUNDS (3) interleaved rounds of Rust / Python / DALI; DALI_THREADS (12,16);
#   CONFIGS (the Rust bench's workers x stages, 4x3: the loader's default on a 16-core host);
#   STAGES (auto: the Python loader's default); PARTS ("images video": which parts to run).
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${OUT:-$here/out}/python-bench"; mkdir -p "$out"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$out/run.log"; }
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "cores: $(nproc)"; date -u
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
} | tee "$out/env.txt"

# gm in a fresh venv that borrows the machine's PyTorch; the peers unpacked once per machine.
if [ ! -x /tmp/gmv/bin/python ]; then
    python3 -m venv /tmp/gmv
    python3 -c "import site; print(site.getsitepackages()[0])" > "$(/tmp/gmv/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
fi
/tmp/gmv/bin/pip install -q --no-index --no-deps --force-reinstall "$here"/whl/gradient_mechanics_rs-*.whl
if [ ! -e /tmp/pynv/.done ]; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/pynv "$here"/whl/pynvvideocodec-*.whl && touch /tmp/pynv/.done
fi
unpack() {  # NAME DEST: the chunks NAME.tar.xz.NN, joined and unpacked once per machine
    [ -e "$2/.done" ] && return
    local parts
    parts=$(find "$here/.." /tmp/parts -name "$1.tar.xz.*" -printf '%f %p\n' 2>/dev/null | sort -u -k1,1 | cut -d' ' -f2)
    [ -n "$parts" ] && mkdir -p "$2" && cat $parts | xz -dcT0 | tar xf - -C "$2" && touch "$2/.done"
}
unpack dali /tmp/dali
unpack ff /tmp/ff
if [ ! -e /tmp/tcx/.done ] && ls "$here"/whl/torchcodec-*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/tcx "$here"/whl/torchcodec-*.whl && touch /tmp/tcx/.done
fi
ffdir="$(find /tmp/ff -name 'libavcodec.so.*' -printf '%h\n' 2>/dev/null | head -1)"
log "gm $(/tmp/gmv/bin/python -c 'import gm; print(gm.__version__)'), dali $([ -e /tmp/dali/.done ] && echo yes || echo no), torchcodec $([ -e /tmp/tcx/.done ] && echo yes || echo no), ffmpeg libs ${ffdir:-none}"
cat "$here"/imagenet/* "$here"/bench_1080p_h264.mp4 > /dev/null   # page cache
export GM_BENCH_REPS="${REPS:-5}"  # epochs per measurement, after a warm-up, for all three

parts="${PARTS:-images video}"
[[ " $parts " == *" images "* ]] || ROUNDS=0
for r in $(seq 1 "${ROUNDS:-3}"); do
    log "round $r: rust"
    GM_BENCH_CONFIGS="${CONFIGS:-4x3}" timeout 150 "$here/gm-loader--pipeline" "$here/imagenet" >> "$out/rust.jsonl" 2>> "$out/rust.err"
    log "round $r: python"
    GM_BENCH_STAGES="${STAGES:-auto}" timeout 150 /tmp/gmv/bin/python "$here/python_package_bench.py" images "$here/imagenet" >> "$out/python.jsonl" 2>> "$out/python.err"
    log "round $r: dali"
    GM_PEERS=dali GM_DALI_THREADS="${DALI_THREADS:-12,16}" PYTHONPATH=/tmp/dali timeout 200 \
        python3 "$here/loader_pipeline_peers.py" "$here/imagenet" >> "$out/dali.jsonl" 2>> "$out/dali.err"
done
[[ " $parts " == *" video "* ]] && log "video" &&
PYTHONPATH=/tmp/pynv:/tmp/tcx LD_LIBRARY_PATH="${ffdir:+$ffdir:}$LD_LIBRARY_PATH" timeout 540 /tmp/gmv/bin/python "$here/python_package_bench.py" video \
    "$here/bench_1080p_h264.mp4" "$here/bench_1080p_h264.framemd5" > "$out/video.jsonl" 2> "$out/video.err"
log "done"
cat "$out"/*.jsonl; tail -n 5 "$out"/*.err
