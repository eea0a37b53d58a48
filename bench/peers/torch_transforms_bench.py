"""The torch chain gm-transforms' fused kernel is compared with (issue 6), in the same run:
for 256 1080p NV12 frames and 256 500x375 RGB images, crop 87.5%, resize to 224x224
(bilinear, antialias off as in the fused kernel), flip every other image, normalize, f16 CHW,
as separate torch operations on the GPU. NV12 is converted to RGB with torch operations
first (BT.709 limited range). Median of 20 timed runs after warm-up, by CUDA events.

Issue 23's colour rows do the same geometry on uint8 with torchvision.transforms.v2.functional,
then ColorJitter(0.4, 0.4, 0.4, 0.1) (and equalize) before normalize: once with each image's own
draw (a loop over the batch, as a per-sample recipe runs; what gm's kernel does) and once with
one draw for the whole batch (v2's ColorJitter on a batch tensor: torch's best case).

The warp rows do that geometry, then RandomAffine(15, translate 0.1, scale 0.9-1.1, bilinear)
or TrivialAugmentWide, per image and (for the affine) once per batch, then normalize; the
batch-op rows time RandomErasing(0.25) per image on a normalized 256x224x224 f16 batch, and
MixUp / CutMix(alpha 1) on that batch with 1000-class labels (v2's batch transforms), as
crates/gm-transforms/benches/{fused,batch_ops}.rs do on gm's side.
"""
import json

import torch
import torch.nn.functional as F

dev = "cuda"
mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1)
std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1)


def timed(fn, reps=20):
    for _ in range(3):
        fn()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ms = []
    for _ in range(reps):
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ms.append(a.elapsed_time(b))
    return sorted(ms)[len(ms) // 2]


def chain(rgb_nchw_float, w, h):
    x0, y0 = int(w * 0.0625), int(h * 0.0625)
    cw, ch = int(w * 0.875), int(h * 0.875)
    x = rgb_nchw_float[:, :, y0:y0 + ch, x0:x0 + cw]
    x = F.interpolate(x, size=(224, 224), mode="bilinear", align_corners=False, antialias=False)
    x = torch.cat([x[0::2], torch.flip(x[1::2], dims=[3])])
    x = (x / 255.0 - mean) / std
    return x.half().contiguous()


def nv12_to_rgb(y, uv):
    y = y.float()
    u = uv[..., 0::2].float().repeat_interleave(2, -1).repeat_interleave(2, -2)
    v = uv[..., 1::2].float().repeat_interleave(2, -1).repeat_interleave(2, -2)
    yn, cb, cr = (y - 16) / 219, (u - 128) / 224, (v - 128) / 224
    kr, kb = 0.2126, 0.0722
    r = yn + 2 * (1 - kr) * cr
    b = yn + 2 * (1 - kb) * cb
    g = (yn - kr * r - kb * b) / (1 - kr - kb)
    return torch.stack([r, g, b], 1).clamp(0, 1) * 255


def colour_chain(rgb_u8_nchw, w, h, per_image, equalize):
    import torchvision.transforms.v2 as T
    import torchvision.transforms.v2.functional as TF

    x0, y0 = int(w * 0.0625), int(h * 0.0625)
    cw, ch = int(w * 0.875), int(h * 0.875)
    x = TF.resized_crop(rgb_u8_nchw, y0, x0, ch, cw, [224, 224], antialias=False)
    x = torch.cat([x[0::2], TF.horizontal_flip(x[1::2])])
    jitter = T.ColorJitter(0.4, 0.4, 0.4, 0.1)
    if per_image:
        out = []
        for img in x:
            img = jitter(img)
            out.append(TF.equalize(img) if equalize else img)
        x = torch.stack(out)
    else:
        x = jitter(x)
        x = TF.equalize(x) if equalize else x
    x = (x.float() / 255.0 - mean) / std
    return x.half().contiguous()


def colour_rows(n):
    rgb = torch.randint(0, 256, (n, 3, 375, 500), dtype=torch.uint8, device=dev)
    for label, equalize in [(" + ColorJitter", False), (" + ColorJitter + equalize", True)]:
        for per_image, how in [(True, "per image"), (False, "one draw per batch")]:
            ms = timed(lambda: colour_chain(rgb, 500, 375, per_image, equalize), reps=10)
            print(json.dumps({"peer": "torchvision v2", "workload": f"256 x 500x375 RGB{label}",
                              "draws": how, "ms": round(ms, 3),
                              "images_per_s": round(n / ms * 1e3)}))


def warp_chain(rgb_u8_nchw, w, h, step, per_image):
    import torchvision.transforms.v2.functional as TF

    x0, y0 = int(w * 0.0625), int(h * 0.0625)
    cw, ch = int(w * 0.875), int(h * 0.875)
    x = TF.resized_crop(rgb_u8_nchw, y0, x0, ch, cw, [224, 224], antialias=False)
    x = torch.cat([x[0::2], TF.horizontal_flip(x[1::2])])
    x = torch.stack([step(img) for img in x]) if per_image else step(x)
    x = (x.float() / 255.0 - mean) / std
    return x.half().contiguous()


def warp_rows(n):
    import torchvision.transforms.v2 as T

    rgb = torch.randint(0, 256, (n, 3, 375, 500), dtype=torch.uint8, device=dev)
    affine = T.RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1),
                            interpolation=T.InterpolationMode.BILINEAR)
    trivial = T.TrivialAugmentWide()
    for label, step, per_image, how in [
        (" + RandomAffine", affine, True, "per image"),
        (" + RandomAffine", affine, False, "one draw per batch"),
        (" + TrivialAugmentWide", trivial, True, "per image"),
    ]:
        ms = timed(lambda: warp_chain(rgb, 500, 375, step, per_image), reps=10)
        print(json.dumps({"peer": "torchvision v2", "workload": f"256 x 500x375 RGB{label}",
                          "draws": how, "ms": round(ms, 3),
                          "images_per_s": round(n / ms * 1e3)}))


def batch_op_rows(n):
    import torchvision.transforms.v2 as T

    x = torch.randn(n, 3, 224, 224, device=dev).half()
    labels = torch.randint(0, 1000, (n,), device=dev)
    for value in [0, "random"]:
        erase = T.RandomErasing(0.25, value=value)
        ms = timed(lambda: torch.stack([erase(img) for img in x]), reps=10)
        print(json.dumps({"peer": "torchvision v2",
                          "workload": f"256 x 224x224 f16 RandomErasing(0.25, value={value})",
                          "draws": "per image", "ms": round(ms, 3)}))
    for name, mix in [("MixUp", T.MixUp(alpha=1.0, num_classes=1000)),
                      ("CutMix", T.CutMix(alpha=1.0, num_classes=1000))]:
        ms = timed(lambda: mix(x, labels), reps=20)
        print(json.dumps({"peer": "torchvision v2", "workload": f"256 x 224x224 f16 {name}",
                          "draws": "one per batch", "ms": round(ms, 3)}))


def main():
    n = 256
    y = torch.randint(0, 256, (n, 1080, 1920), dtype=torch.uint8, device=dev)
    uv = torch.randint(0, 256, (n, 540, 1920), dtype=torch.uint8, device=dev)
    ms = timed(lambda: chain(nv12_to_rgb(y, uv), 1920, 1080))
    print(json.dumps({"peer": "torch", "workload": "256 x 1080p NV12", "ms": round(ms, 3), "images_per_s": round(n / ms * 1e3)}))
    del y, uv
    rgb = torch.randint(0, 256, (n, 375, 500, 3), dtype=torch.uint8, device=dev)
    ms = timed(lambda: chain(rgb.permute(0, 3, 1, 2).float(), 500, 375))
    print(json.dumps({"peer": "torch", "workload": "256 x 500x375 RGB", "ms": round(ms, 3), "images_per_s": round(n / ms * 1e3)}))
    del rgb
    colour_rows(n)
    warp_rows(n)
    batch_op_rows(n)


if __name__ == "__main__":
    main()
