#!/usr/bin/env python3
"""Decodes every file of the JPEG corpus with gm and with libjpeg-turbo, and sorts the results.

    check.py CORPUS GM_OUT_DIR [--report report.json]

GM_OUT_DIR holds what `gm jpeg --no-orientation --out GM_OUT_DIR` wrote for the corpus (one
PNG per decoded file, named after its stem) and its log, `gm.log` (one line per file: decoded or
the reason it was refused). The reference is libjpeg-turbo's `djpeg` (strict: an error is a
refusal; a warning such as "premature end of data" still gives an image, as libjpeg-turbo's
default error manager does); where djpeg cannot write the colour space (CMYK/YCCK), or where
djpeg is not installed (the GPU machine), Pillow (also libjpeg-turbo) gives the reference: strict,
then with truncated data allowed for djpeg's warnings. The bound is the project's 35 dB PSNR over RGB.
"""
import argparse
import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image, ImageFile

PSNR_BOUND = 35.0


def djpeg(path: Path):
    """(status, rgb array or None, message): status is ok, warning or error."""
    with tempfile.NamedTemporaryFile(suffix=".pnm") as out:
        run = subprocess.run(["djpeg", "-outfile", out.name, str(path)],
                             capture_output=True, text=True, timeout=60)
        msg = run.stderr.strip().replace("\n", " | ")
        if run.returncode == 1 or Path(out.name).stat().st_size == 0:
            return "error", None, msg
        try:
            img = Image.open(out.name)
            img.load()
        except Exception as e:  # djpeg wrote something Pillow cannot read: treat as no image
            return "error", None, f"{msg} ({e})"
        status = "warning" if run.returncode == 2 or msg else "ok"
        return status, np.asarray(img.convert("RGB")), msg


def pillow(path: Path):
    try:
        img = Image.open(path)
        img.load()
        return np.asarray(img.convert("RGB")), ""
    except Exception as e:
        return None, str(e)


def pillow_reference(path: Path):
    """djpeg's three outcomes through Pillow: strict, then with truncated data allowed."""
    ref, msg = pillow(path)
    if ref is not None:
        return "ok", ref, ""
    ImageFile.LOAD_TRUNCATED_IMAGES = True
    try:
        ref, _ = pillow(path)
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = False
    return ("warning", ref, msg) if ref is not None else ("error", None, msg)


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return math.inf if mse == 0 else 10 * math.log10(255 * 255 / mse)


def gm_results(gm_out: Path):
    """file name -> (True, png path) or (False, reason), from gm's log."""
    results = {}
    for line in (gm_out / "gm.log").read_text(errors="replace").splitlines():
        m = re.match(r"^(.*?): \d+x\d+ \S+ via (\S+) -> (.*\.png)$", line)
        if m:
            results[Path(m.group(1)).name] = (True, Path(m.group(3)), m.group(2))
            continue
        for name in re.findall(r"[^\s:]+\.(?:jpe?g|mpo|jfif)", line, re.I):
            results.setdefault(Path(name).name, (False, line.strip(), None))
            break
    return results


def classify(path: Path, gm):
    if shutil.which("djpeg"):
        status, ref, msg = djpeg(path)
        ref_from = "djpeg"
    else:
        status, ref, msg = pillow_reference(path)
        ref_from = "pillow"
    if status == "error" and "colorspace" in msg.lower():
        ref, _ = pillow(path)
        if ref is not None:
            status, ref_from = "ok", "pillow"
    row = {"file": path.name, "reference": status, "reference_from": ref_from,
           "reference_message": msg}
    decoded = gm is not None and gm[0]
    row["gm"] = "decoded" if decoded else "refused"
    if not decoded:
        row["gm_reason"] = gm[1] if gm else "no line in gm.log"
    else:
        row["gm_path"] = gm[2]
    if decoded and ref is not None:
        ours = np.asarray(Image.open(gm[1]).convert("RGB"))
        if ours.shape != ref.shape:
            row["verdict"] = f"size differs: gm {ours.shape[:2]} ref {ref.shape[:2]}"
            return row
        row["psnr"] = psnr(ours, ref)
        row["verdict"] = "match" if row["psnr"] >= PSNR_BOUND else "below bound"
    elif decoded:
        row["verdict"] = "gm decodes what the reference refuses"
    elif ref is not None:
        row["verdict"] = "gm refuses what the reference decodes"
    else:
        row["verdict"] = "both refuse"
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", type=Path)
    ap.add_argument("gm_out", type=Path)
    ap.add_argument("--report", type=Path)
    args = ap.parse_args()
    gm = gm_results(args.gm_out)
    rows = [classify(p, gm.get(p.name)) for p in sorted(args.corpus.iterdir())]
    counts = {}
    for r in rows:
        key = (r["reference"], r["verdict"])
        counts[key] = counts.get(key, 0) + 1
    print(f"{len(rows)} files")
    for (ref, verdict), n in sorted(counts.items()):
        print(f"  reference {ref:8} | {verdict}: {n}")
    for r in rows:
        if r["verdict"] not in ("match", "both refuse"):
            detail = r.get("gm_reason") or f"{r.get('psnr', float('nan')):.1f} dB"
            print(f"  {r['verdict']}: {r['file']} [ref {r['reference']}: "
                  f"{r['reference_message'][:80]}] gm: {detail[:160]}")
    if args.report:
        args.report.write_text(json.dumps(rows, indent=1, default=str))
    bad = [r for r in rows if r["verdict"] in ("gm refuses what the reference decodes",
                                               "below bound") or r["verdict"].startswith("size")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
