"""A small COCO instances + keypoints file over committed photos (tests/media/jpeg) and the
targets torchvision reads from it (CocoDetection wrapped for transforms v2, masks by
pycocotools): the references for gm's CocoDataset (crates/gm-loader/tests/coco.rs).
python make_instances.py writes instances.json and expected.json (torchvision 0.29.2 and
pycocotools 2.0.11 made the committed files)."""
import json
import os

import numpy as np
import torch
import torchvision
from pycocotools import mask as mu
from torchvision.datasets import CocoDetection
from torchvision.datasets import wrap_dataset_for_transforms_v2

HERE = os.path.dirname(os.path.abspath(__file__))
JPEG = os.path.join(HERE, "..", "jpeg")
PERSON = ["nose", "left_eye", "right_eye", "left_ear", "right_ear"]


def kp(points):
    return [v for p in points for v in p]


def main():
    images = [
        {"id": 11, "file_name": "baboon-201x151-420.jpg", "width": 201, "height": 151},
        {"id": 12, "file_name": "baboon-201x151-422.jpg", "width": 201, "height": 151},
        {"id": 13, "file_name": "baboon-12x10-420.jpg", "width": 12, "height": 10},
        {"id": 14, "file_name": "baboon-201x151-440.jpg", "width": 201, "height": 151},
    ]
    crowd_mask = torch.zeros(151, 201, dtype=torch.uint8)
    crowd_mask[100:140, 20:90] = 1
    runs, cur, n = [], 0, 0
    for v in crowd_mask.numpy().flatten(order="F"):
        if v != cur:
            runs.append(n)
            cur, n = int(v), 0
        n += 1
    runs.append(n)
    eye = torch.zeros(151, 201, dtype=torch.uint8)
    eye[30:52, 60:95] = 1
    eye_rle = mu.encode(np.asfortranarray(eye.numpy()))
    annotations = [
        # Two polygons for one object (one decimal, as COCO writes them).
        {"id": 101, "image_id": 11, "category_id": 1, "iscrowd": 0, "bbox": [20.5, 10.0, 90.0, 70.2],
         "segmentation": [[20.5, 10.0, 110.5, 15.2, 80.3, 80.2, 25.0, 60.1],
                          [60.0, 40.0, 70.0, 40.0, 65.5, 50.5]], "area": 4000.0},
        # Compressed runs.
        {"id": 102, "image_id": 11, "category_id": 2, "iscrowd": 0, "bbox": [60.0, 30.0, 35.0, 22.0],
         "segmentation": {"size": [151, 201], "counts": eye_rle["counts"].decode()},
         "area": 770.0},
        # A crowd region in uncompressed runs.
        {"id": 103, "image_id": 11, "category_id": 1, "iscrowd": 1, "bbox": [20.0, 100.0, 70.0, 40.0],
         "segmentation": {"size": [151, 201], "counts": runs}, "area": 2800.0},
        # A person with keypoints, some unlabelled (v = 0).
        {"id": 201, "image_id": 12, "category_id": 3, "iscrowd": 0, "bbox": [50.0, 20.0, 80.0, 120.0],
         "segmentation": [[50.0, 20.0, 130.0, 20.0, 130.0, 140.0, 50.0, 140.0]],
         "keypoints": kp([[90, 30, 2], [85, 27, 2], [95, 27, 1], [0, 0, 0], [100, 29, 2]]),
         "num_keypoints": 4, "area": 9600.0},
        {"id": 202, "image_id": 12, "category_id": 3, "iscrowd": 0, "bbox": [140.0, 60.0, 40.0, 70.0],
         "segmentation": [[140.0, 60.0, 180.0, 60.0, 160.0, 130.0]],
         "keypoints": kp([[150, 70, 2], [0, 0, 0], [0, 0, 0], [0, 0, 0], [170, 66, 1]]),
         "num_keypoints": 3, "area": 1400.0},
        # Image 13 has no object; image 14's box leaves the image (a bad annotation).
        {"id": 401, "image_id": 14, "category_id": 2, "iscrowd": 0, "bbox": [180.0, 10.0, 60.0, 20.0],
         "segmentation": [[180.0, 10.0, 240.0, 10.0, 240.0, 30.0]], "area": 600.0},
    ]
    categories = [{"id": 1, "name": "baboon", "supercategory": "animal"},
                  {"id": 2, "name": "eye", "supercategory": "part"},
                  {"id": 3, "name": "person", "supercategory": "person", "keypoints": PERSON,
                   "skeleton": [[1, 2], [1, 3]]}]
    coco = {"images": images, "annotations": annotations, "categories": categories}
    path = os.path.join(HERE, "instances.json")
    with open(path, "w") as f:
        json.dump(coco, f)
    raw = CocoDetection(JPEG, path)
    ds = wrap_dataset_for_transforms_v2(raw, target_keys=["image_id", "boxes", "labels", "masks",
                                                          "iscrowd"])
    expected = []
    for i in range(3):  # image 14 is the bad one
        _, t = ds[i]
        entry = {"image_id": t["image_id"]}
        if "boxes" in t:
            entry["boxes"] = t["boxes"].tolist()
            entry["canvas"] = list(t["boxes"].canvas_size)
            entry["labels"] = t["labels"].tolist()
            entry["iscrowd"] = list(t["iscrowd"])
            entry["masks"] = [mu.encode(np.asfortranarray(m.numpy().astype("uint8")))["counts"].decode()
                              for m in t["masks"]]
            # torchvision's wrapper has no keypoints: COCO's own, per object.
            entry["keypoints"] = [o.get("keypoints") for o in raw[i][1]]
        expected.append(entry)
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump({"torchvision": torchvision.__version__, "targets": expected}, f)


if __name__ == "__main__":
    main()
