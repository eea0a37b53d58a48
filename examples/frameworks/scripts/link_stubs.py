#!/usr/bin/env python3
"""Link-time stand-ins for the CUDA libraries candle's CUDA backend links (cudarc's
`dynamic-linking`): libcuda, cuBLAS, cuBLASLt, cuRAND, NVRTC and NCCL, with the sonames the
real libraries have, so a binary built here loads the real ones on the GPU machine. Every
function returns an error code; nothing here ever runs on a GPU machine.

Usage: link_stubs.py OUT_DIR   (reads the function names from cudarc's sources in CARGO_HOME)
"""
import glob, os, re, subprocess, sys

LIBS = {  # cudarc module -> (library name, soname of the CUDA 13 / driver 580 library)
    "driver": ("cuda", "libcuda.so.1"),
    "cublas": ("cublas", "libcublas.so.13"),
    "cublaslt": ("cublasLt", "libcublasLt.so.13"),
    "curand": ("curand", "libcurand.so.10"),
    "nvrtc": ("nvrtc", "libnvrtc.so.13"),
    "nccl": ("nccl", "libnccl.so.2"),
}

def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    roots = sorted(glob.glob(f"{home}/registry/src/*/cudarc-0.19.*"))
    if not roots:
        sys.exit("cudarc 0.19 sources not found: run `cargo fetch` first")
    for module, (name, soname) in LIBS.items():
        text = open(f"{roots[-1]}/src/{module}/sys/mod.rs").read()
        names = sorted(set(re.findall(r'load::<_F>\("(\w+)"\)', text)))
        c = os.path.join(out, f"{name}_stub.c")
        with open(c, "w") as f:
            f.writelines(f"int {n}(void) {{ return 999; }}\n" for n in names)
        lib = os.path.join(out, f"lib{name}.so")
        subprocess.run(["cc", "-shared", "-fPIC", "-o", lib, c, f"-Wl,-soname,{soname}"], check=True)
        print(f"{lib}: {len(names)} functions, soname {soname}")

main()
