"""Boxes and keypoints through torchvision.transforms.v2.functional's geometric kernels (and
RandomIoUCrop's transform, the detection references' FixedSizeCrop, SanitizeBoundingBoxes'
filter): the references for gm's targets (crates/gm-transforms/tests/targets.rs). Run with torch and
torchvision installed: python make_references.py > cases.json (torchvision 0.29.2 made the
committed file)."""
import json
import random

import torch
import torchvision
from torchvision import tv_tensors
from torchvision.transforms.v2 import RandomIoUCrop
from torchvision.transforms.v2 import functional as F

FORMATS = ["XYXY", "XYWH", "CXCYWH"]

# Each step as gm's chain spells it, applied by torchvision's functional ops.
CHAINS = {
    "hflip": [["hflip"]],
    "vflip": [["vflip"]],
    "crop": [["crop", 5, 7, 30, 40]],
    "resize": [["resize", 100, 32]],
    "pad": [["pad", 3, 5, 7, 2]],
    "affine": [["affine", 30.0, [5.0, -3.0], 1.2, [10.0, 5.0], None]],
    "affine_center": [["affine", -15.0, [0.0, 0.0], 0.8, [0.0, 0.0], [10.0, 20.0]]],
    "rotate": [["rotate", 37.0, None]],
    "rotate_180": [["rotate", 180.0, None]],
    "rotate_0": [["rotate", 0.0, None]],
    "rotate_center": [["rotate", 90.0, [20.0, 10.0]]],
    "center_crop": [["center_crop", 30, 27]],
    "center_crop_pad": [["center_crop", 80, 71]],
    "resized_crop_flip": [["crop", 4, 6, 30, 40], ["resize", 32, 24], ["hflip"]],
    "pad_crop_resize_vflip": [["pad", 4, 2, 0, 6], ["crop", 1, 3, 40, 50], ["resize", 25, 20],
                              ["vflip"]],
    "flip_then_crop": [["hflip"], ["crop", 2, 10, 25, 30]],
    "affine_then_crop": [["affine", 12.0, [2.0, 4.0], 1.0, [0.0, 0.0], None],
                         ["crop", 3, 3, 30, 30]],
    "resize_rotate": [["resize", 50, 70], ["rotate", -23.0, None]],
    "shear_x": [["affine", 0.0, [0.0, 0.0], 1.0, [17.5, 0.0], [0.0, 0.0]]],
    "resize_max": [["resize_max", 40, 60]],
    "resize_max_capped": [["resize_max", 50, 55]],
    "resize_longer": [["resize_longer", 30]],
    # Corner offsets (top-left, top-right, bottom-right, bottom-left) of the first step's image.
    "perspective": [["perspective", [[3, 2], [-4, 5], [-2, -3], [5, -1]]]],
    "perspective_resize": [["perspective", [[-6, 0], [2, 7], [0, -4], [8, 3]]],
                           ["resize", 40, 30]],
    # RandomIoUCrop.transform with the crop given (left, top, width, height) and its
    # is_within_crop_area computed as its make_params computes it.
    "iou_crop": [["iou_crop", 6, 4, 25, 30]],
    "flip_iou_crop_resize": [["hflip"], ["iou_crop", 2, 9, 31, 22], ["resize", 40, 30]],
    # The detection references' FixedSizeCrop (width, height, r: the drawn torch.rand(1)),
    # spelled in torchvision's functional ops; objects its crop leaves empty are dropped.
    "fixed_size_crop": [["fixed_size_crop", 30, 26, 0.37]],
    "fixed_size_crop_pad": [["resize", 50, 20], ["fixed_size_crop", 40, 40, 0.81]],
    "iou_crop_sanitize": [["iou_crop", 5, 5, 30, 28], ["sanitize", 1.0, 1.0]],
    "fixed_size_crop_sanitize": [["fixed_size_crop", 20, 60, 0.5], ["sanitize", 2.0, 12.0]],
    # A pad whose fill masks take too (left, top, right, bottom, fill), as RandomCrop's
    # padding with fill={Mask: 255} pads a segmentation's ignore index.
    "pad_mask_fill": [["pad_fill", 3, 5, 7, 2, 255]],
    "pad_fill_crop_flip": [["pad_fill", 4, 4, 4, 4, 255], ["crop", 3, 6, 40, 40], ["hflip"]],
    # Warps whose masks fill with their own value (the last argument), as RandomAffine,
    # RandomRotation and RandomPerspective with fill={Mask: 255} fill a segmentation's masks.
    "affine_mask_fill": [["affine_fill", 30.0, [5.0, -3.0], 1.2, [10.0, 5.0], None, 255]],
    "rotate_mask_fill": [["rotate_fill", 37.0, None, 255]],
    "rotate_center_mask_fill": [["rotate_fill", 90.0, [20.0, 10.0], 7]],
    "perspective_mask_fill": [["perspective_fill", [[3, 2], [-4, 5], [-2, -3], [5, -1]], 255]],
}


def iou_crop(x, left, top, w, h):
    """RandomIoUCrop's transform of x with this crop; boxes' centres decide which it zeroes."""
    params = dict(top=top, left=left, height=h, width=w)
    if isinstance(x, tv_tensors.BoundingBoxes):
        xyxy = F.convert_bounding_box_format(x.as_subclass(torch.Tensor), x.format, "XYXY")
        cx = 0.5 * (xyxy[..., 0] + xyxy[..., 2])
        cy = 0.5 * (xyxy[..., 1] + xyxy[..., 3])
        params["is_within_crop_area"] = (left < cx) & (cx < left + w) & (top < cy) & (cy < top + h)
    return RandomIoUCrop().transform(x, params)


def fixed_size_crop(x, keep, cw, ch, r):
    """The detection references' FixedSizeCrop with its drawn r, on x (keep: the objects so far,
    narrowed where its crop leaves a box empty)."""
    h, w = F.get_size(x)
    nh, nw = min(h, ch), min(w, cw)
    if (nh, nw) != (h, w):
        r = torch.tensor([r], dtype=torch.float32)
        top, left = int(max(h - ch, 0) * r), int(max(w - cw, 0) * r)
        x = F.crop(x, top, left, nh, nw)
        if isinstance(x, tv_tensors.BoundingBoxes) and keep is not None:
            xyxy = F.convert_bounding_box_format(x.as_subclass(torch.Tensor), x.format, "XYXY")
            keep &= (xyxy[:, 0] < xyxy[:, 2]) & (xyxy[:, 1] < xyxy[:, 3])
    if ch - nh or cw - nw:
        x = F.pad(x, [0, 0, cw - nw, ch - nh])
    return x


def apply(step, x, keep=None):
    op, args = step[0], step[1:]
    if op == "iou_crop":
        return iou_crop(x, *args)
    if op == "fixed_size_crop":
        return fixed_size_crop(x, keep, *args)
    if op == "sanitize":
        if isinstance(x, tv_tensors.BoundingBoxes) and keep is not None:
            _, valid = F.sanitize_bounding_boxes(x, min_size=args[0], min_area=args[1])
            keep &= valid
        return x
    if op == "hflip":
        return F.horizontal_flip(x)
    if op == "vflip":
        return F.vertical_flip(x)
    if op == "crop":  # gm: CropBox(left, top, width, height); torchvision: top, left, h, w
        left, top, w, h = args
        return F.crop(x, top, left, h, w)
    if op == "resize":  # width, height
        return F.resize(x, [args[1], args[0]])
    if op == "resize_max":  # shorter side, max_size
        return F.resize(x, [args[0]], max_size=args[1])
    if op == "resize_longer":  # max_size
        return F.resize(x, None, max_size=args[0])
    if op == "pad":  # left, top, right, bottom
        return F.pad(x, list(args))
    if op == "pad_fill":  # left, top, right, bottom, fill
        return F.pad(x, list(args[:4]), fill=args[4])
    # The *_fill warps: the fill a transform's {Mask: v} dict gives masks (boxes and
    # keypoints take none).
    fill = args[-1] if op.endswith("_fill") else None
    if op in ("affine", "affine_fill"):
        angle, translate, scale, shear, center = args[:5]
        return F.affine(x, angle=angle, translate=translate, scale=scale, shear=shear,
                        center=center, fill=fill)
    if op in ("rotate", "rotate_fill"):
        angle, center = args[:2]
        return F.rotate(x, angle, center=center, fill=fill)
    if op in ("perspective", "perspective_fill"):
        h, w = F.get_size(x)
        start = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
        end = [[a + d[0], b + d[1]] for (a, b), d in zip(start, args[0])]
        return F.perspective(x, start, end, fill=fill)
    if op == "center_crop":  # width, height
        # torchvision pads an image smaller than the crop by (crop - size) // 2 on the left
        # and top, but moves targets by -round((size - crop) / 2), a pixel more where the
        # padding is odd: targets then leave their pixels. gm moves them with the pixels, so
        # the reference pads the targets as the image kernel pads the image, then crops.
        h, w = F.get_size(x)
        cw, ch = args
        if cw > w or ch > h:
            dw, dh = max(cw - w, 0), max(ch - h, 0)
            x = F.pad(x, [dw // 2, dh // 2, (dw + 1) // 2, (dh + 1) // 2])
        return F.center_crop(x, [ch, cw])
    raise ValueError(op)


def boxes_for(w, h, rng):
    """Boxes inside, across the edges, tiny and degenerate, as XYXY float32."""
    out = []
    for _ in range(7):
        x1, y1 = rng.uniform(-10, w), rng.uniform(-10, h)
        out.append([x1, y1, x1 + rng.uniform(0, w / 2), y1 + rng.uniform(0, h / 2)])
    out += [[3.0, 4.0, 3.0, 9.0], [0.0, 0.0, float(w), float(h)], [w - 2.5, h - 1.25, w + 4.0,
                                                                      h + 3.0]]
    return torch.tensor(out, dtype=torch.float32)


def label_map(w, h):
    """Labels in 5x4 blocks (0..6), so that nearest sampling shows where it reads."""
    y, x = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    return ((x // 5 + 3 * (y // 4)) % 7).to(torch.uint8)


def fnv1a(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def case(name, chain, w, h, rng):
    xyxy = boxes_for(w, h, rng)
    formats = {}
    for fmt in FORMATS:
        b = tv_tensors.BoundingBoxes(xyxy, format="XYXY", canvas_size=(h, w))
        b = F.convert_bounding_box_format(b, new_format=fmt)
        x = b
        keep = torch.ones(len(b), dtype=torch.bool)
        for step in chain:
            x = apply(step, x, keep)
        formats[fmt] = {"input": b.tolist(), "expected": x[keep].tolist(),
                        "kept": keep.tolist(), "canvas": [x.canvas_size[1], x.canvas_size[0]]}
    pts = torch.tensor([[rng.uniform(-5, w + 5), rng.uniform(-5, h + 5)] for _ in range(9)]
                       + [[0.0, 0.0], [w - 1.0, h - 1.0]], dtype=torch.float32)
    k = tv_tensors.KeyPoints(pts, canvas_size=(h, w))
    y = k
    for step in chain:
        y = apply(step, y)
    m = tv_tensors.Mask(label_map(w, h))
    for step in chain:
        m = apply(step, m)
    mask = {"width": m.shape[-1], "height": m.shape[-2], "fnv1a": fnv1a(m.flatten().tolist()),
            "sum": int(m.sum())}
    return {"name": name, "width": w, "height": h, "chain": chain, "boxes": formats, "mask": mask,
            "keypoints": {"input": pts.tolist(), "expected": y.tolist(),
                          "canvas": [y.canvas_size[1], y.canvas_size[0]]}}


def main():
    rng = random.Random(42)
    cases = [case(f"{name}_{w}x{h}", chain, w, h, rng)
             for (w, h) in [(64, 48), (37, 53)] for name, chain in CHAINS.items()]
    print(json.dumps({"torchvision": torchvision.__version__, "cases": cases}))


if __name__ == "__main__":
    main()
