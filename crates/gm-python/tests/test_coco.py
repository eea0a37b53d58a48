"""gm.CocoDataset: targets as torchvision reads them, and batches whose targets move with
their images (tests/media/coco: instances.json over committed photos, expected.json from
torchvision 0.29.2 and pycocotools)."""
import json

import numpy as np
import pytest

import gm
from conftest import MEDIA

COCO = MEDIA / "coco"
JPEG = MEDIA / "jpeg"


def arr(t):
    return np.from_dlpack(t)


def test_targets_equal_torchvisions():
    d = gm.CocoDataset(COCO / "instances.json", JPEG)
    assert len(d) == 4
    expected = json.loads((COCO / "expected.json").read_text())["targets"]
    for i, want in enumerate(expected):
        t = d.targets(i)
        assert t["image_id"] == want["image_id"] == d.image(i)["id"]
        if "boxes" not in want:
            assert arr(t["boxes"]).shape == (0, 4)
            continue
        single = [k for k, c in enumerate(want["iscrowd"]) if not c]
        crowd = [k for k, c in enumerate(want["iscrowd"]) if c]
        boxes = np.array(want["boxes"], dtype=np.float32)
        assert np.array_equal(arr(t["boxes"]), boxes[single])
        assert np.array_equal(arr(t["crowd_boxes"]), boxes[crowd])
        assert arr(t["labels"]).tolist() == [want["labels"][k] for k in single]
        masks = arr(t["masks"])
        assert masks.shape == (len(single), 151, 201) and set(np.unique(masks)) <= {0, 1}
        if "keypoints" in t:
            kp = arr(t["keypoints"])
            vis = arr(t["keypoints_visible"])
            raw = np.array([want["keypoints"][k] for k in single], dtype=np.float32).reshape(len(single), -1, 3)
            assert np.array_equal(kp, raw[..., :2]) and np.array_equal(vis, raw[..., 2] > 0)
    with pytest.raises(gm.GmError, match=r"instances.json.*baboon-201x151-440.jpg.*annotation 401"):
        d.targets(3)


def nearest(n_in, n_out):
    """torch's nearest source index (interpolate(mode="nearest"))."""
    scale = np.float32(n_in) / np.float32(n_out)
    return np.minimum(np.floor(np.arange(n_out, dtype=np.float32) * scale), n_in - 1).astype(int)


def test_loader_batches_move_targets_with_their_pixels():
    d = gm.CocoDataset(COCO / "instances.json", JPEG, drop_empty=True)
    assert len(d) == 3
    T = gm.transforms
    chain = [T.Resize((48, 64)), T.RandomHorizontalFlip(p=1.0)]
    loader = gm.ImageLoader(d, batch_size=2, transforms=chain, device="cpu", prefetch_next_epoch=False)
    seen = 0
    for batch in loader:
        assert len(batch.targets) == len(batch)
        for i, t in zip(batch.indices, batch.targets):
            seen += 1
            assert d.image(i)["id"] != 14  # its bad annotation makes it a bad sample
            alone = d.targets(i)
            b = arr(alone["boxes"])
            sx, sy = np.float32(64 / 201), np.float32(48 / 151)
            scaled = b * np.array([sx, sy, sx, sy], dtype=np.float32)
            flipped = np.stack([64 - scaled[:, 2], scaled[:, 1], 64 - scaled[:, 0], scaled[:, 3]], 1)
            assert np.allclose(arr(t["boxes"]), flipped, atol=1e-4)
            assert arr(t["labels"]).tolist() == arr(alone["labels"]).tolist()
            m = arr(alone["masks"])[:, nearest(151, 48)][:, :, nearest(201, 64)][:, :, ::-1]
            assert np.array_equal(arr(t["masks"]), m)
    # Like a bad image: skipped, counted, named with the annotation.
    assert seen == 2
    stats = loader.stats()
    assert stats["bad"] == 1 and stats["skipped"] == 1
    assert "annotation 401" in stats["first_errors"][0][2]


def three_epochs(d, chain, seed):
    """Every batch of three epochs of a shuffled CPU loader over `d`, bad samples skipped."""
    loader = gm.ImageLoader(d, batch_size=2, transforms=chain, device="cpu", shuffle=True,
                            seed=seed, bad_samples="skip")
    out = []
    for e in range(3):
        loader.set_epoch(e)
        out += list(loader)
    return out


def test_masks_kept_after_their_first_rasterizing_give_the_same_batches():
    """mask_cache_mb: a dataset that keeps its objects' masks after the first epoch gives the
    same targets (alone and moved in batches, epoch after epoch) as one that rasterizes them
    every time, and reports what it keeps."""
    T = gm.transforms
    chain = [T.RandomIoUCrop(), T.SanitizeBoundingBoxes(), T.RandomHorizontalFlip(), T.Resize((40, 56))]

    def run(d):
        return [(b.indices, arr(b.images), b.targets) for b in three_epochs(d, chain, seed=5)]

    kept = gm.CocoDataset(COCO / "instances.json", JPEG, drop_empty=True)
    fresh = gm.CocoDataset(COCO / "instances.json", JPEG, drop_empty=True, mask_cache_mb=0)
    assert kept.mask_cache_bytes == 0
    a, b = run(kept), run(fresh)
    assert kept.mask_cache_bytes > 0 and fresh.mask_cache_bytes == 0
    assert len(a) == len(b) > 0
    for (ia, xa, ta), (ib, xb, tb) in zip(a, b):
        assert ia == ib and np.array_equal(xa, xb)
        for da, db in zip(ta, tb):
            assert (da is None) == (db is None)
            if da is not None:
                assert set(da) == set(db)
                for k in da:
                    assert np.array_equal(arr(da[k]), arr(db[k])) if k != "image_id" else da[k] == db[k]
    for i in range(len(kept)):
        try:
            want = fresh.targets(i)
        except gm.GmError as e:
            with pytest.raises(gm.GmError) as again:
                kept.targets(i)
            assert str(again.value) == str(e)
            continue
        got = kept.targets(i)
        assert all(np.array_equal(arr(got[k]), arr(want[k])) for k in want if k != "image_id")


def test_target_keys_keep_only_those_keys():
    """torchvision's target_keys: the dicts (alone and in batches) hold only the keys asked
    for, with the values every key's dicts hold; "all" is every key; an unknown key is refused
    by name."""
    full = gm.CocoDataset(COCO / "instances.json", JPEG, drop_empty=True)
    T = gm.transforms
    chain = [T.RandomIoUCrop(), T.SanitizeBoundingBoxes(), T.Resize((48, 64))]

    def batches(d):
        return [t for b in three_epochs(d, chain, seed=3) for t in b.targets]

    everything = batches(full)
    for keys in (["boxes", "labels", "masks"], ("boxes", "labels"), ["image_id", "crowd_boxes"]):
        d = gm.CocoDataset(COCO / "instances.json", JPEG, drop_empty=True, target_keys=keys)
        for i in range(len(d)):
            try:
                alone, want = d.targets(i), full.targets(i)
            except gm.GmError:
                continue
            assert set(alone) == set(keys)
            for k in keys:
                assert np.array_equal(arr(alone[k]), arr(want[k])) if k != "image_id" else alone[k] == want[k]
        got = batches(d)
        assert len(got) == len(everything) > 0
        for g, w in zip(got, everything):
            assert set(g) == set(keys)
            for k in keys:
                assert np.array_equal(arr(g[k]), arr(w[k])) if k != "image_id" else g[k] == w[k]
    assert set(gm.CocoDataset(COCO / "instances.json", JPEG, target_keys="all").targets(0)) == set(full.targets(0))
    with pytest.raises(ValueError, match='no key "mask"; the keys are image_id, boxes'):
        gm.CocoDataset(COCO / "instances.json", JPEG, target_keys=["boxes", "mask"])


def test_a_coco_source_does_not_stream():
    d = gm.CocoDataset(COCO / "instances.json", JPEG)
    with pytest.raises(ValueError, match="CocoDataset"):
        gm.ImageLoader(d, batch_size=2, transforms=[gm.transforms.Resize((8, 8))], device="cpu",
                       stream=True)


def check_objects(t, canvas_hw):
    """A target dict's objects agree with each other and lie on the canvas."""
    b = arr(t["boxes"])
    n = b.shape[0]
    assert arr(t["labels"]).shape == (n,)
    if "masks" in t:
        assert arr(t["masks"]).shape == (n, *canvas_hw)
    h, w = canvas_hw
    assert np.all(b[:, 0] >= 0) and np.all(b[:, 2] <= w) and np.all(b[:, 1] >= 0) and np.all(b[:, 3] <= h)
    return b


def test_ssd_chain_crops_around_boxes_and_sanitizes_them():
    d = gm.CocoDataset(COCO / "instances.json", JPEG, drop_empty=True)
    T = gm.transforms
    chain = [T.RandomIoUCrop(), T.RandomHorizontalFlip(), T.SanitizeBoundingBoxes(),
             T.Resize((48, 64))]
    loader = gm.ImageLoader(d, batch_size=3, transforms=chain, shuffle=True, seed=2, device="cpu")
    counts = set()
    for epoch in range(12):
        loader.set_epoch(epoch)
        for batch in loader:
            for t in batch.targets:
                if t is None:
                    continue
                b = check_objects(t, (48, 64))
                # Sanitized on the crop's canvas (at least a pixel wide and high), then resized.
                assert np.all(b[:, 2] > b[:, 0]) and np.all(b[:, 3] > b[:, 1])
                counts.add(b.shape[0])
    assert len(counts) >= 2, f"crops never dropped an object: {counts}"


def test_lsj_chain_gives_fixed_size_batches_with_their_objects():
    d = gm.CocoDataset(COCO / "instances.json", JPEG, drop_empty=True)
    T = gm.transforms
    chain = [T.ScaleJitter((60, 60), scale_range=(0.3, 2.0)), T.FixedSizeCrop(60, fill=114),
             T.RandomHorizontalFlip()]
    loader = gm.ImageLoader(d, batch_size=3, transforms=chain, seed=5, device="cpu")
    padded = cropped = 0
    for epoch in range(6):
        loader.set_epoch(epoch)
        for batch in loader:
            images = arr(batch.images)
            assert images.shape[1:] == (3, 60, 60)
            for k, t in enumerate(batch.targets):
                if t is None:
                    continue
                b = check_objects(t, (60, 60))
                assert np.all(b[:, 2] > b[:, 0]) and np.all(b[:, 3] > b[:, 1])
                # A small jitter pads with the fill at the bottom-right corner.
                if np.all(images[k, :, -1, -1] == 114):
                    padded += 1
                else:
                    cropped += 1
    assert padded and cropped, (padded, cropped)


def test_iou_crop_without_boxes_names_the_sample(good_folder):
    T = gm.transforms
    loader = gm.ImageLoader(str(good_folder), batch_size=2, transforms=[T.RandomIoUCrop()],
                            device="cpu", bad_samples="fail")
    with pytest.raises(gm.GmError, match="RandomIoUCrop.*bounding boxes"):
        next(iter(loader))


def write_coco_shards(folder):
    """The instances fixture as two WebDataset shards: each photo with its record
    (``{"image": ..., "annotations": [...]}``), and a last sample without one."""
    import io
    import tarfile

    coco = json.loads((COCO / "instances.json").read_text())
    samples = []
    for im in coco["images"]:
        record = {"image": im, "annotations": [a for a in coco["annotations"] if a["image_id"] == im["id"]]}
        key = im["file_name"][: -len(".jpg")]
        samples.append((key, {"jpg": (JPEG / im["file_name"]).read_bytes(), "json": json.dumps(record).encode()}))
    samples.append(("no-record", {"jpg": (JPEG / coco["images"][0]["file_name"]).read_bytes()}))
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for n, part in enumerate((samples[:2], samples[2:])):
        path = folder / f"coco-{n:06d}.tar"
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
            for key, members in part:
                for ext, data in members.items():
                    info = tarfile.TarInfo(f"{key}.{ext}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        paths.append(path)
    return paths


def check_sharded_targets(d):
    folder = gm.CocoDataset(COCO / "instances.json", JPEG)
    assert len(d) == len(folder) + 1
    for i in range(len(folder)):
        assert d.image(i) == folder.image(i)
        if i == 3:
            with pytest.raises(gm.GmError, match=r"coco-000001.tar#baboon-201x151-440.*annotation 401"):
                d.targets(i)
            continue
        got, want = d.targets(i), folder.targets(i)
        assert got.keys() == want.keys()
        for k in want:
            if isinstance(want[k], int):
                assert got[k] == want[k]
            else:
                assert np.array_equal(arr(got[k]), arr(want[k])), (i, k)
    with pytest.raises(gm.GmError, match=r"coco-000001.tar#no-record: no COCO record.*no .json member"):
        d.targets(4)


def test_coco_records_in_shards_give_the_folders_targets(tmp_path):
    paths = write_coco_shards(tmp_path / "shards")
    pattern = str(tmp_path / "shards" / "coco-{000000..000001}.tar")
    d = gm.CocoDataset.from_shards(pattern, COCO / "instances.json")
    check_sharded_targets(d)
    # The shards as a loader source: targets move with the pixels, as from the folder.
    kept = gm.CocoDataset.from_shards([str(p) for p in paths], COCO / "instances.json", drop_empty=True)
    assert [kept.image(i)["id"] for i in range(len(kept))] == [11, 12, 14, 4]
    loader = gm.ImageLoader(kept, batch_size=2, transforms=[gm.transforms.Resize((48, 64))], device="cpu",
                            prefetch_next_epoch=False)
    ids = []
    for batch in loader:
        for i, t in zip(batch.indices, batch.targets):
            ids.append(kept.image(i)["id"])
            assert arr(t["boxes"]).shape[0] == arr(kept.targets(i)["boxes"]).shape[0]
    # Image 14's bad annotation and image 4's missing record make them bad samples.
    assert sorted(ids) == [11, 12] and loader.stats()["bad"] == 2


def test_coco_records_in_s3_shards(s3, tmp_path):
    write_coco_shards(tmp_path / "shards")
    bucket = s3.bucket("coco")
    assert s3.upload(bucket, tmp_path / "shards", "wds") == 2
    d = gm.CocoDataset.from_shards(f"s3://{bucket}/wds/coco-{{000000..000001}}.tar", COCO / "instances.json",
                                   storage=s3.storage)
    check_sharded_targets(d)


def test_aspect_ratio_groups_batch_one_group_at_a_time_and_resume():
    d = gm.CocoDataset(COCO / "instances.json", JPEG)
    # Portrait or landscape (factor 0): the 12x10 and 201x151 images are all landscape, so
    # give groups by hand too: images 0 and 2 against 1 and 3.
    T = gm.transforms
    chain = [T.Resize((24, 32))]
    loader = gm.ImageLoader(d, batch_size=2, transforms=chain, device="cpu", shuffle=True, seed=4,
                            batch_groups=[0, 1, 0, 1])
    assert len(loader) == 2
    batches = [list(b.indices) for b in loader]
    # Image 3's bad annotation makes it a bad sample, skipped: its batch is one short.
    assert sorted(sorted(b) for b in batches) == [[0, 2], [1]]
    # Resumed after the first batch: the second.
    loader.set_epoch(1)
    it = iter(loader)
    first = list(next(it).indices)
    state = loader.state_dict()
    rest = [list(b.indices) for b in it]
    again = gm.ImageLoader(d, batch_size=2, transforms=chain, device="cpu", shuffle=True, seed=4,
                           batch_groups=[0, 1, 0, 1])
    again.load_state_dict(state)
    assert [list(b.indices) for b in again] == rest and sorted(first + rest[0]) == [0, 1, 2]
    # From the records' sizes: one landscape group, two whole batches.
    by_ratio = gm.ImageLoader(d, batch_size=2, transforms=chain, device="cpu",
                              aspect_ratio_group_factor=3)
    assert len(by_ratio) == 2 and sum(len(b) for b in by_ratio) == 3
    with pytest.raises(ValueError, match="batch_groups"):
        gm.ImageLoader(str(JPEG), batch_size=2, transforms=chain, device="cpu", aspect_ratio_group_factor=3)
    with pytest.raises(ValueError, match="3 batch groups for a dataset of 4"):
        gm.ImageLoader(d, batch_size=2, transforms=chain, device="cpu", batch_groups=[0, 1, 0])
