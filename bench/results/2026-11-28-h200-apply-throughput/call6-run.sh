#!/usr/bin/env bash
# The exact uint8 antialias's precisions computed once per image before the launch
# (gm_aa_exact_prepare): fused_gpu (exactness against torchvision's arithmetic and the twin),
# the apply GPU tests, and the apply bench.
set -u
REPO=$PWD; H=$REPO/.hs/g45
mkdir -p /tmp/g && cp -r "$H"/* /tmp/g/ && H=/tmp/g
nvj="$(find /usr/local/cuda* -name 'libnvjpeg.so.13*' 2>/dev/null | head -1)"
[ -n "$nvj" ] && export LD_LIBRARY_PATH="$(dirname "$nvj"):${LD_LIBRARY_PATH:-}"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc; } | tee "$OUT/summary.txt"
export GM_FIXTURES="$REPO/tests/media" GM_REQUIRE_GPU=1
for f in $H/bin/*.xz; do xz -d "$f"; chmod +x "${f%.xz}"; done
timeout 150 $H/bin/fused_gpu > "$OUT/fused_gpu.txt" 2>&1; echo "fused_gpu rc=$? $(grep 'test result' $OUT/fused_gpu.txt)" | tee -a "$OUT/summary.txt"
grep -E "panicked|FAILED" "$OUT/fused_gpu.txt" | head -5 | tee -a "$OUT/summary.txt"
python3 -m venv /tmp/gmv && python3 -c "import site; print(site.getsitepackages()[0])" > "$(/tmp/gmv/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
/tmp/gmv/bin/pip install -q --no-index --no-deps --force-reinstall $H/gradient_mechanics_rs-*.whl
(cd crates/gm-python && timeout 200 /tmp/gmv/bin/python -m pytest -q -p no:cacheprovider tests/gpu/test_apply_gpu.py > "$OUT/pytest.txt" 2>&1; echo "pytest rc=$?" | tee -a "$OUT/summary.txt")
tail -15 "$OUT/pytest.txt" | tee -a "$OUT/summary.txt"
(cd bench/peers && timeout 200 /tmp/gmv/bin/python apply_bench.py > "$OUT/apply_bench.jsonl" 2> "$OUT/apply_bench.err"; echo "apply_bench rc=$?" | tee -a "$OUT/summary.txt")
cat "$OUT/apply_bench.jsonl"; tail -5 "$OUT/apply_bench.err"
