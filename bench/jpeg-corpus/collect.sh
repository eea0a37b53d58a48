#!/usr/bin/env bash
# Gathers the JPEG corpus of issue 25 into one flat folder (default target/jpeg-corpus), each
# file named <source>__<path with / as _> so that names stay unique and say where they came from.
#
# Sources, pinned:
#   - libjpeg-turbo's test images (testimages/*.jpg), commit 8a99315b (2026-07-01)
#   - jpeg-decoder's test suites (tests/reftest, tests/crashtest incl. imagetestsuite, tests/icc,
#     fuzz-afl/in), commit eb2d7c0f (2025-06-21): unusual sampling, lossless, progressive,
#     arithmetic, CMYK, and many corrupt files
#   - Pillow 12.0.0's Tests/images (the sdist on PyPI): cameras, MPO, CMYK, EXIF, ICC, 12-bit
# GitHub sources are read from local checkouts when LIBJPEG_TURBO_GIT / JPEG_DECODER_GIT name
# their git directories, else from GitHub's tarballs.
set -euo pipefail
out=${1:-target/jpeg-corpus}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

from_git() { # name, git dir or "", owner/repo, commit, path regex
    local name=$1 git=$2 repo=$3 commit=$4 re=$5 dir="$work/$1"
    mkdir -p "$dir"
    if [ -n "$git" ]; then
        # A partial mirror may lack some blobs: take what it holds, say what it lacks.
        git --git-dir="$git" ls-tree -r --name-only "$commit" | grep -E "$re" | while read -r f; do
            mkdir -p "$dir/$(dirname "$f")"
            git --git-dir="$git" cat-file blob "$commit:$f" >"$dir/$f" 2>/dev/null \
                || { rm -f "$dir/$f"; echo "missing in the mirror: $name $f" >&2; }
        done
    else
        curl -sSfL "https://codeload.github.com/$repo/tar.gz/$commit" | tar -xz -C "$dir" --strip-components=1
    fi
    (cd "$dir" && find . -type f | sed 's|^\./||' | grep -E "$re") | while read -r f; do
        cp "$dir/$f" "$out/${name}__${f//\//_}"
    done
}

from_git libjpeg-turbo "${LIBJPEG_TURBO_GIT:-}" libjpeg-turbo/libjpeg-turbo \
    8a99315babe7fe946bef539c125f26b9e6aad8ab '^testimages/.*\.jpe?g$'
from_git jpeg-decoder "${JPEG_DECODER_GIT:-}" image-rs/jpeg-decoder \
    eb2d7c0f6a2d0298aba7a7f8b9ca1440353e8f8c '^(tests|fuzz-afl)/.*\.(jpe?g|JPE?G)$'

pillow="$work/pillow-12.0.0.tar.gz"
curl -sSfL -o "$pillow" \
    https://files.pythonhosted.org/packages/5a/b0/cace85a1b0c9775a9f8f5d5423c8261c858760e2466c79b2dd184638b056/pillow-12.0.0.tar.gz
tar -xzf "$pillow" -C "$work" --wildcards '*/Tests/images/*'
(cd "$work/pillow-12.0.0/Tests/images" && find . -type f | sed 's|^\./||' \
    | grep -iE '\.(jpe?g|mpo|jfif)$') | while read -r f; do
    cp "$work/pillow-12.0.0/Tests/images/$f" "$out/pillow__${f//\//_}"
done
echo "$(ls "$out" | wc -l) files in $out"
