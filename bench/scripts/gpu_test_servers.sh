#!/usr/bin/env bash
# The S3 and HTTP test servers of gm-storage's tests on the GPU machine, which has Python but
# no network: a venv at /tmp/gm-test-servers from wheels carried in WHEELS (made here with
#   pip download --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
#       --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d WHEELS \
#       -r xtask/test-servers.txt
# ), and the two launchers `cargo xtask test` writes. Run from the repository root; prints the
# exports to eval: GM_MOTO_SERVER, GM_RANGE_HTTP and GM_REQUIRE_S3=1 (so a test that cannot start
# a server fails instead of printing SKIP).
set -eu
wheels="${1:?usage: gpu_test_servers.sh WHEELS}"
root="$(pwd)"
venv=/tmp/gm-test-servers
if [ ! -e "$venv/.done" ]; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --no-index --find-links "$wheels" -r xtask/test-servers.txt >&2
    touch "$venv/.done"
fi
for s in moto_s3:gm-moto-s3 range_http:gm-range-http; do
    printf '#!/bin/sh\nexec %s %s "$@"\n' "$venv/bin/python" "$root/xtask/servers/${s%%:*}.py" > "$venv/bin/${s#*:}"
    chmod +x "$venv/bin/${s#*:}"
done
echo "export GM_MOTO_SERVER=$venv/bin/gm-moto-s3 GM_RANGE_HTTP=$venv/bin/gm-range-http GM_REQUIRE_S3=1"
