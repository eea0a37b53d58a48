"""Label maps for gm's semantic segmentation tests (crates/gm-loader/tests/segmentation.rs):
PNGs of class indices beside tests/media/jpeg's photos, in the formats datasets use (8-bit
palette as Pascal VOC, 8-bit grey as ADE20K, 4-bit palette, 1-bit grey), bad ones apart, and
expected.json with each map's indices as PIL reads them back. Run with numpy and Pillow:
python make_masks.py (writes masks/, bad/ and expected.json here)."""
import json
import pathlib

import numpy as np
from PIL import Image

HERE = pathlib.Path(__file__).parent


def fnv1a(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def classes(w, h, n, seed):
    """Blocks of classes with a speckle of others, so that a wrong row or bit shows."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    m = ((x // 13) + 2 * (y // 11)) % n
    speckle = rng.random((h, w)) < 0.05
    m[speckle] = rng.integers(0, n, speckle.sum())
    return m.astype(np.uint8)


def palette(n):
    return [v for i in range(256) for v in ((i * 37) % 256, (i * 91) % 256, (i * 53) % 256)][: 3 * 256]


def save_p(m, path, bits):
    im = Image.fromarray(m, mode="P")
    im.putpalette(palette(256))
    im.save(path, bits=bits) if bits < 8 else im.save(path)


def main():
    masks, bad = HERE / "masks", HERE / "bad"
    masks.mkdir(exist_ok=True)
    bad.mkdir(exist_ok=True)
    made = {
        "baboon-201x151-420.png": ("P8", classes(201, 151, 21, 1)),
        "baboon-201x151-422.png": ("L8", classes(201, 151, 150, 2)),
        "baboon-201x151-440.png": ("P4", classes(201, 151, 16, 3)),
        "baboon-12x10-420.png": ("L1", (np.add.outer(2 * np.arange(10), np.arange(12)) // 3 % 2)
                                 .astype(np.uint8)),
    }
    for name, (kind, m) in made.items():
        path = masks / name
        if kind == "P8":
            save_p(m, path, 8)
        elif kind == "P4":
            save_p(m, path, 4)
        elif kind == "L8":
            Image.fromarray(m, mode="L").save(path)
        else:
            Image.fromarray(m.astype(bool)).save(path)  # mode "1": 1-bit grey
    # Bad: colour-coded, 16-bit, cut short, and a map of another size than its image.
    Image.fromarray(np.stack([classes(201, 151, 5, 5)] * 3, -1), mode="RGB").save(bad / "rgb.png")
    Image.fromarray(classes(20, 10, 44, 6).astype(np.uint16) * 300).save(bad / "deep.png")
    whole = (masks / "baboon-201x151-420.png").read_bytes()
    (bad / "cut.png").write_bytes(whole[: len(whole) // 2])
    expected = {}
    for name in made:
        back = np.array(Image.open(masks / name)).astype(np.uint8)
        assert np.array_equal(back, made[name][1]), name
        expected[name] = {"width": back.shape[1], "height": back.shape[0],
                          "fnv1a": fnv1a(back.tobytes()),
                          "sum": int(back.astype(np.int64).sum()), "mode": Image.open(masks / name).mode}
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main()
