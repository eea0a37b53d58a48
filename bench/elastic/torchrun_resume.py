"""Resuming one epoch at other world sizes under torchrun, one process per GPU: 4 ranks stop
at different batches and save their state_dicts, which are merged (gm.merge_states); 3 ranks
take the rest, stop again, merge; 2 ranks finish the epoch. Every image must come once
(apart from the last world's padding), each with the uninterrupted epoch's crop and flip.

    python3 torchrun_resume.py ref   OUT IMAGES          # one process, the whole epoch
    torchrun --nproc_per_node=4 torchrun_resume.py a OUT IMAGES
    python3 torchrun_resume.py merge OUT a               # -> OUT/merged_a.json
    torchrun --nproc_per_node=3 torchrun_resume.py b OUT IMAGES
    python3 torchrun_resume.py merge OUT b
    torchrun --nproc_per_node=2 torchrun_resume.py c OUT IMAGES
    python3 torchrun_resume.py check OUT"""

import json
import os
import pathlib
import sys

STOPS = {"a": [3, 1, 2, 0], "b": [2, 4, 1], "c": [None, None]}
PREVIOUS = {"b": "a", "c": "b"}


def run(stage, out, images):
    import torch
    import gm
    from gm import transforms as T

    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    local = int(os.environ.get("LOCAL_RANK", 0))
    # On a host with fewer GPUs than ranks, ranks share them (the resumption is the same).
    gpu = local % torch.cuda.device_count()
    loader = gm.ImageLoader(images, batch_size=8, shuffle=True, seed=3, device=f"cuda:{gpu}",
                            transforms=[T.RandomResizedCrop(64), T.RandomHorizontalFlip()])
    if stage in PREVIOUS:
        loader.load_state_dict(json.loads((out / f"merged_{PREVIOUS[stage]}.json").read_text()))
    else:
        loader.set_epoch(2)
    stop = None if stage == "ref" else STOPS[stage][rank]
    seen = []
    it = iter(loader)
    while stop is None or len(seen) < stop:
        b = next(it, None)
        if b is None:
            break
        x = torch.from_dlpack(b.images).to(torch.float64)
        means = x.flatten(1).mean(1).tolist()
        seen.append(list(zip(b.indices, means)))
    state = loader.state_dict()
    (out / f"seen_{stage}_{rank}.json").write_text(json.dumps({
        "rank": rank, "world": world, "gpu": torch.cuda.get_device_name(gpu), "batches": seen}))
    (out / f"state_{stage}_{rank}.json").write_text(json.dumps(state))


def merge(out, stage):
    import gm
    states = [json.loads(p.read_text()) for p in sorted(out.glob(f"state_{stage}_*.json"))]
    merged = gm.merge_states(states)
    (out / f"merged_{stage}.json").write_text(json.dumps(merged))
    print(f"merged {len(states)} states of stage {stage}: epoch {merged['epoch']}")


def check(out):
    ref = {}
    for b in json.loads((out / "seen_ref_0.json").read_text())["batches"]:
        ref.update({i: s for i, s in b})
    count = {i: 0 for i in ref}
    exact = 0
    for p in sorted(out.glob("seen_[abc]_*.json")):
        d = json.loads(p.read_text())
        for b in d["batches"]:
            for i, s in b:
                count[i] += 1
                # The same crop and flip (seed, epoch, index); the JPEG decoder an image gets
                # (NVJPG engines or CUDA) depends on its place in its batch, and the two
                # differ by IDCT rounding: the mean pixel within a step.
                assert abs(s - ref[i]) < 1.0, f"{p.name}: image {i}: mean {s} against {ref[i]}"
                exact += s == ref[i]
        print(p.name, d["gpu"], "batches", len(d["batches"]))
    missed = [i for i, c in count.items() if c == 0]
    repeats = sum(c - 1 for c in count.values() if c > 1)
    assert not missed, f"never delivered: {missed}"
    assert repeats < 2, f"{repeats} repeats (the last world of 2 pads at most 1)"
    print(f"OK: {len(ref)} images, each once across worlds 4 -> 3 -> 2 ({repeats} padding repeats);"
          f" {exact} of {sum(count.values())} bit-identical to the uninterrupted epoch's, the rest"
          " within a step of mean")


if __name__ == "__main__":
    what, out = sys.argv[1], pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    if what == "merge":
        merge(out, sys.argv[3])
    elif what == "check":
        check(out)
    else:
        run(what, out, sys.argv[3])
