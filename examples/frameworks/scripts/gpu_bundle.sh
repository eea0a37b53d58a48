#!/usr/bin/env bash
# Builds gm-frameworks with candle's CUDA backend (the `candle-cuda` feature, which CI does not
# build) and packs its GPU test and examples into target/fw-bundle for the GPU machine:
#   examples/frameworks/scripts/gpu_bundle.sh      (here: nvcc from pip, link-time stand-ins)
#   target/fw-bundle/run.sh                        (there: the real CUDA libraries of its PyTorch)
# Needs: pip's nvcc 13.0 (nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88
# nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85) with $CU pointing at its nvidia/cu13.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
: "${CU:?set CU to the nvidia/cu13 folder of the pip wheels (nvcc, headers, libcudart)}"
export PATH=$CU/bin:$PATH CUDA_ROOT=$CU CUDA_PATH=$CU CUDA_HOME=$CU CUDA_COMPUTE_CAP=90
export LIBRARY_PATH=$CU/lib:${LIBRARY_PATH:-}
python3 "$root/examples/frameworks/scripts/link_stubs.py" "$CU/lib" >/dev/null
ln -sf libcudart.so.13 "$CU/lib/libcudart.so"
# The dev profile (candle-kernels' nvcc build is then shared with `cargo build`), optimized
# where the time goes.
opts=()
for p in gm-cuda gm-codec gm-loader gm-transforms gm-demux gm-episodes gm-interop gm-frameworks \
    candle-core candle-nn gemm gemm-common gemm-f32 gemm-f16 zune-jpeg image half \
    burn-tensor burn-backend burn-ndarray burn-cubecl burn-cuda cubecl-runtime cubecl-cuda \
    cubecl-core ndarray burn-std burn-core burn-ir; do
    opts+=(--config "profile.dev.package.$p.opt-level=3")
done
# cubecl-runtime 0.10 counts staged upload bytes in a u32 (drop_queue/policy.rs), which
# overflows after 4 GiB of uploads between flushes: a panic with overflow checks, a wrap in
# release builds.
opts+=(--config "profile.dev.package.cubecl-runtime.overflow-checks=false")
cd "$root"
mkdir -p target
cargo build "${opts[@]}" -p gm-frameworks --features candle-cuda --examples --tests \
    --message-format=json-render-diagnostics > target/fw-build.json
out=target/fw-bundle
rm -rf "$out" && mkdir -p "$out/bin"
python3 - "$out/bin" <<'PY'
import json, shutil, sys
for line in open("target/fw-build.json"):
    m = json.loads(line)
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    if "gm-frameworks" not in m["package_id"]:
        continue
    kind, name = m["target"]["kind"][0], m["target"]["name"]
    if (kind, name) in {("example", "train_cnn"), ("example", "handoff"),
                        ("example", "train_clips"), ("test", "interop_gpu")}:
        shutil.copy(m["executable"], f"{sys.argv[1]}/{name}")
PY
strip "$out"/bin/*
cp -r assets/demo/videos "$out/videos"
# xz packs the four binaries (candle's kernels, burn and gm in each) to about a seventh.
(cd "$out" && tar -cJf bin.tar.xz bin && rm -r bin)
cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# On the GPU machine: the candle/burn interop tests and the training examples.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
libs=$(python3 -c 'import glob, os, site
dirs = {os.path.dirname(p) for s in site.getsitepackages()
        for p in glob.glob(s + "/nvidia/**/lib*.so*", recursive=True)}
print(":".join(sorted(dirs)))')
export LD_LIBRARY_PATH=$libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export GM_REQUIRE_GPU=1
cd "$here"
[ -d bin ] || tar -xJf bin.tar.xz
cd bin
status=0
./interop_gpu --test-threads=1 || status=1
./train_cnn --device cuda --steps 300 --batch 256 --size 224 --images 2560 || status=1
./train_cnn --device cuda --steps 300 --batch 256 --size 224 --images 2560 --handoff move || status=1
./train_cnn --device cuda --steps 300 --batch 256 --size 224 --images 2560 --driver-pool-default || status=1
./handoff --batches 40 || status=1
./handoff --batches 40 --driver-pool-default || status=1
./train_clips --steps 150 --videos "$here/videos" || status=1
exit $status
RUN
chmod +x "$out/run.sh"
du -sh "$out"
