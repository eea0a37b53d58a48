"""Reference chains that torchvision runs as several resamplings or roundings of a uint8 image
(a warp after a resized crop, a crop or resize after a warp, two warps, a colour operation or a
pad before a warp, two sharpness operations), by torchvision.transforms.v2.functional on uint8
CHW tensors on the CPU, one function after the other. gm-transforms cuts such chains into
passes (PrePass) and is checked against these: the CPU twin in tests/passes.rs, the fused
kernel in tests/geometry_gpu.rs. Sources: the 64x48 photo crop and the random 37x53 image of
.. (baboon, random). Run with torch + torchvision installed:
    python3 make_references.py     (writes here: <source>_<chain>.u8 and chains.json)
Outputs are HWC RGB u8, like the sources. Crop boxes are fractions of each source's size;
chains.json records the pixel boxes torchvision got, and the output sizes. Where a chain
starts with a resampling step (its "split" is 1), its output is saved too (<source>_<chain>
_head.u8): torch resizes uint8 in fixed point, a step away from our float resize in places,
and a statistic after it (equalize) can widen that; the rest of the chain run on
torchvision's head shows the passes themselves exact.
"""
import json
import os

import numpy as np
import torch
import torchvision
import torchvision.transforms.v2.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = os.path.join(HERE, "..")
NEAREST = "nearest"
BILINEAR = "bilinear"

# A resized crop as RandomResizedCrop applies it (bilinear, antialias=True): the box as
# fractions (top, left, height, width) of the source, the output size (height, width).
RRC = {"op": "resized_crop", "box": [0.1, 0.15, 0.7, 0.6], "size": [26, 22]}
RRC_UP = {"op": "resized_crop", "box": [0.2, 0.1, 0.5, 0.45], "size": [40, 36]}


def affine(angle, translate, scale, shear, interpolation, fill):
    return {"op": "affine", "angle": angle, "translate": translate, "scale": scale,
            "shear": shear, "interpolation": interpolation, "fill": fill}


def rotate(angle, interpolation, fill):
    return {"op": "rotate", "angle": angle, "interpolation": interpolation, "fill": fill}


CHAINS = [
    ("rrc_shear_nearest", [RRC, affine(0.0, [0, 0], 1.0, [10.0, 0.0], NEAREST, None)]),
    ("rrc_rotate_equalize", [RRC, rotate(17.0, NEAREST, [128, 64, 200]), {"op": "equalize"}]),
    ("rrc_equalize_rotate_bilinear", [RRC, {"op": "equalize"}, rotate(-23.0, BILINEAR, None)]),
    ("rrc_flip_affine_crop", [RRC, {"op": "hflip"},
                              affine(12.0, [2, -1], 1.1, [5.0, -3.0], BILINEAR, [10, 200, 30]),
                              {"op": "center_crop", "size": [20, 17]}]),
    ("rrc_up_two_warps_sharpness", [RRC_UP, rotate(9.0, NEAREST, None),
                                    affine(0.0, [0, 0], 1.0, [0.0, -8.0], NEAREST, None),
                                    {"op": "sharpness", "factor": 1.8}]),
    ("affine_then_resize", [affine(-14.0, [1, 2], 0.9, [0.0, 0.0], BILINEAR, [0, 0, 0]),
                            {"op": "resize", "size": [30, 41]}]),
    ("brightness_pad_rotate", [RRC, {"op": "brightness", "factor": 1.3},
                               {"op": "pad", "padding": [2, 3, 1, 4], "fill": [9, 99, 199]},
                               rotate(30.0, NEAREST, [255, 255, 0])]),
    ("pad_rotate", [{"op": "pad", "padding": [3, 0, 5, 2], "fill": [40, 40, 40]},
                    rotate(-41.0, NEAREST, None)]),
    ("shrink_rotate_bilinear", [{"op": "resize", "size": [19, 23]}, rotate(33.0, BILINEAR, [5, 6, 7])]),
    ("sharpness_twice_rotate", [{"op": "sharpness", "factor": 0.3}, {"op": "sharpness", "factor": 2.0},
                                rotate(12.0, NEAREST, None)]),
    ("rrc_contrast_shear_autocontrast", [RRC, {"op": "contrast", "factor": 0.6},
                                         affine(0.0, [0, 0], 1.0, [0.0, 11.0], NEAREST, None),
                                         {"op": "autocontrast"}]),
]


def apply(img, step, box_px):
    op = step["op"]
    if op == "resized_crop":
        top, left, height, width = box_px
        return F.resized_crop(img, top, left, height, width, step["size"],
                              interpolation=F.InterpolationMode.BILINEAR, antialias=True)
    if op == "affine":
        return F.affine(img, angle=step["angle"], translate=step["translate"], scale=step["scale"],
                        shear=step["shear"], interpolation=F.InterpolationMode(step["interpolation"]),
                        fill=step["fill"])
    if op == "rotate":
        return F.rotate(img, step["angle"], interpolation=F.InterpolationMode(step["interpolation"]),
                        fill=step["fill"])
    if op == "equalize":
        return F.equalize(img)
    if op == "autocontrast":
        return F.autocontrast(img)
    if op == "hflip":
        return F.horizontal_flip(img)
    if op == "center_crop":
        return F.center_crop(img, step["size"])
    if op == "resize":
        return F.resize(img, step["size"], interpolation=F.InterpolationMode.BILINEAR, antialias=True)
    if op == "pad":
        return F.pad(img, step["padding"], fill=step["fill"])
    if op == "sharpness":
        return F.adjust_sharpness(img, step["factor"])
    if op == "brightness":
        return F.adjust_brightness(img, step["factor"])
    if op == "contrast":
        return F.adjust_contrast(img, step["factor"])
    raise ValueError(op)


def box(step, h, w):
    t, l, bh, bw = step["box"]
    return [int(t * h), int(l * w), int(bh * h), int(bw * w)]


def main():
    with open(os.path.join(SOURCES, "cases.json")) as f:
        sizes = json.load(f)["sources"]
    manifest = {"torch": torch.__version__, "torchvision": torchvision.__version__, "sources": {},
                "chains": []}
    for name in ("baboon", "random"):
        manifest["sources"][name] = sizes[name]
    for cname, steps in CHAINS:
        # The head: the first step when it resamples (its rounding differs from ours by a
        # step, torch's uint8 resize being fixed-point); the tail runs on torchvision's head.
        split = 1 if steps[0]["op"] in ("resized_crop", "resize", "affine") else 0
        chain = {"name": cname, "steps": steps, "split": split, "boxes": {}, "sizes": {},
                 "head_sizes": {}}
        for name, (w, h) in manifest["sources"].items():
            hwc = np.fromfile(os.path.join(SOURCES, f"{name}.rgb"), dtype=np.uint8).reshape(h, w, 3)
            img = torch.from_numpy(hwc).permute(2, 0, 1).contiguous()
            boxes = []
            for k, step in enumerate(steps):
                if k == split and split > 0:
                    chain["head_sizes"][name] = [img.shape[2], img.shape[1]]
                    img.permute(1, 2, 0).contiguous().numpy().tofile(
                        os.path.join(HERE, f"{name}_{cname}_head.u8"))
                px = None
                if step["op"] == "resized_crop":
                    px = box(step, img.shape[1], img.shape[2])
                    boxes.append(px)
                img = apply(img, step, px)
            chain["boxes"][name] = boxes
            chain["sizes"][name] = [img.shape[2], img.shape[1]]
            img.permute(1, 2, 0).contiguous().numpy().tofile(os.path.join(HERE, f"{name}_{cname}.u8"))
        manifest["chains"].append(chain)
    with open(os.path.join(HERE, "chains.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
