#!/bin/bash
# GPU session, tests call: the whole bundle's tests with the S3/HTTP test servers (so the remote
# tests run instead of printing SKIP), (pytest.sh runs the Python package's tests.)
# Carried before (earlier calls of the same session): /tmp/srvwheels.
set -u
root="$(pwd)"
cp -r target/gpu-bundle /tmp/gb
cd /tmp/gb && { [ -d tests ] || tar -xJf tests.tar.xz; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
eval "$(cd "$root" && bench/scripts/gpu_test_servers.sh /tmp/srvwheels)"
echo "servers: $GM_MOTO_SERVER $GM_RANGE_HTTP" > $OUT/gpu-bundle.txt
GM_LOG_DIR=/tmp/logs ./run.sh >> $OUT/gpu-bundle.txt 2>&1
echo "run.sh rc=$?" >> $OUT/gpu-bundle.txt
tar czf $OUT/logs.tgz -C /tmp logs
grep -E "^(FAIL|TOTAL)" $OUT/gpu-bundle.txt
