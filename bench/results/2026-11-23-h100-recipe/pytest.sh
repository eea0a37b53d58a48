#!/bin/bash
# GPU session, pytest call: the wheel built here (maturin, carried as target/wheels) pip-installed
# into a fresh venv that borrows the machine's PyTorch, moto from the carried server wheels, and
# the package's whole pytest suite with GM_REQUIRE_GPU=1.
set -u
root="$(pwd)"
cd "$root"
python3 -m venv /tmp/v && /tmp/v/bin/pip install -q --no-index --no-deps target/wheels/*.whl
# moto for test_remote.py (S3 in the test process), from the same carried wheels.
/tmp/v/bin/pip install -q --no-index --find-links /tmp/srvwheels -r xtask/test-servers.txt > $OUT/pip-servers.txt 2>&1
python3 -c "import site; print(site.getsitepackages()[0])" > "$(/tmp/v/bin/python -c 'import site; print(site.getsitepackages()[0])')/machine.pth"
GM_REQUIRE_GPU=1 timeout 300 /tmp/v/bin/python -m pytest -q --no-header -p no:cacheprovider crates/gm-python/tests > $OUT/pytest.txt 2>&1
echo "pytest rc=$?" >> $OUT/pytest.txt
tail -5 $OUT/pytest.txt
grep -E "passed|failed" $OUT/pytest.txt | tail -3
