"""Two nodes meeting on loopback, reading WebDataset shards from an S3 server (issue 45, item 2):
`torchrun --nnodes=2 --nproc_per_node=2` twice on one host (node ranks 0 and 1, a c10d
rendezvous on 127.0.0.1), every rank streaming its share of the shards with gm.ImageLoader
(stream=True) onto the GPU. Each node must fetch only its own ranks' shards, each shard once,
and the four ranks together must deliver every sample of the epoch once.

    python3 two_nodes_s3.py serve OUT IMAGES SHARDS   # moto's S3 on loopback, shards uploaded;
                                                      # prints PORT, logs requests to OUT/s3.log
    torchrun --nnodes=2 --nproc_per_node=2 --node_rank=K ... two_nodes_s3.py train OUT PORT SHARDS
    python3 two_nodes_s3.py check OUT SHARDS
"""

import io
import json
import os
import pathlib
import re
import sys
import tarfile
import time

BUCKET = "wds"
PER_SHARD = 48


def pattern(port, shards):
    return f"s3://{BUCKET}/train-{{000000..{shards - 1:06d}}}.tar"


def storage(port):
    return {"endpoint": f"http://127.0.0.1:{port}", "region": "us-east-1", "allow_http": True,
            "access_key_id": "test", "secret_access_key": "test"}


def write_shards(images, shards):
    """SHARDS tars of PER_SHARD samples (the JPEGs under IMAGES cycled, labelled by their index
    modulo 4), as (name, bytes, keys)."""
    files = sorted(p for p in pathlib.Path(images).rglob("*.jpg") if "truncated" not in p.name)
    out, n = [], 0
    for s in range(shards):
        buf, keys = io.BytesIO(), []
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for _ in range(PER_SHARD):
                key = f"{n:06d}"
                for ext, data in (("jpg", files[n % len(files)].read_bytes()), ("cls", str(n % 4).encode())):
                    info = tarfile.TarInfo(f"{key}.{ext}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
                keys.append(key)
                n += 1
        out.append((f"train-{s:06d}.tar", buf.getvalue(), keys))
    return out


def serve(out, images, shards):
    import threading

    import boto3
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    # moto's S3 app, with every GET's object and byte range logged (one JSON line each): what
    # each shard cost in requests and bytes.
    app, lock, log = DomainDispatcherApplication(create_backend_app), threading.Lock(), open(out / "s3.log", "a")

    def logged(environ, start_response):
        if environ["REQUEST_METHOD"] == "GET":
            with lock:
                log.write(json.dumps([environ.get("PATH_INFO"), environ.get("HTTP_RANGE")]) + "\n")
                log.flush()
        return app(environ, start_response)

    server = make_server("127.0.0.1", 0, logged, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_port
    s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                      aws_access_key_id="test", aws_secret_access_key="test")
    s3.create_bucket(Bucket=BUCKET)
    made = write_shards(images, shards)
    for name, data, _ in made:
        s3.put_object(Bucket=BUCKET, Key=name, Body=data)
    (out / "shards.json").write_text(json.dumps({name: keys for name, _, keys in made}))
    (out / "sizes.json").write_text(json.dumps({name: len(data) for name, data, _ in made}))
    print("PORT", port, flush=True)
    while True:
        time.sleep(3600)


def train(out, port, shards):
    import torch
    import torch.distributed as dist
    import gm
    from gm import transforms as T

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    node, local = int(os.environ["GROUP_RANK"]), int(os.environ["LOCAL_RANK"])
    gpu = local % torch.cuda.device_count()
    loader = gm.ImageLoader(pattern(port, shards), stream=True, storage=storage(port), batch_size=16,
                            device=f"cuda:{gpu}", seed=5, bad_samples="skip",
                            # One epoch: the next one is not started behind its last batches (its
                            # shards would be fetched again, as the next epoch needs them).
                            prefetch_next_epoch=False,
                            transforms=[T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                                        T.ToDtype(torch.float16, scale=True),
                                        T.Normalize(T.IMAGENET_MEAN, T.IMAGENET_STD)])
    names, start = [], time.perf_counter()
    for b in loader:
        x = torch.from_dlpack(b.images)
        assert x.is_cuda and x.shape[1:] == (3, 224, 224), x.shape
        names.extend(b.names)
    seconds = time.perf_counter() - start
    (out / f"rank{rank}.json").write_text(json.dumps({
        "rank": rank, "world": world, "node": node, "local_rank": local, "gpu": gpu,
        "placement": loader.placement, "names": names, "seconds": seconds,
        "bad": loader.stats()["bad"]}))
    dist.barrier()
    dist.destroy_process_group()


def check(out, shards):
    want = json.loads((out / "shards.json").read_text())
    ranks = [json.loads(p.read_text()) for p in sorted(out.glob("rank*.json"))]
    assert len(ranks) == 4, f"{len(ranks)} ranks wrote results"
    by_node, samples = {0: set(), 1: set()}, []
    for r in ranks:
        for n in r["names"]:
            url, key = n.rsplit("#", 1)
            shard = url.rsplit("/", 1)[1]
            by_node[r["node"]].add(shard)
            samples.append((shard, key))
        print(f"node {r['node']} rank {r['rank']} (GPU {r['gpu']}): {len(r['names'])} samples from "
              f"{sorted({n.rsplit('#', 1)[0].rsplit('/', 1)[1] for n in r['names']})} in {r['seconds']:.1f} s; "
              f"{r['placement']}")
    every = sorted((s, k) for s, keys in want.items() for k in keys)
    assert sorted(samples) == every, f"{len(samples)} samples delivered, {len(every)} in the shards"
    assert not by_node[0] & by_node[1], f"shards read by both nodes: {by_node[0] & by_node[1]}"
    assert by_node[0] | by_node[1] == set(want), "shards nobody read"
    # The server's log: the byte ranges GET of each shard, which must cover it once.
    ranges = {}
    for line in (out / "s3.log").read_text().splitlines():
        path, header = json.loads(line)
        m = re.fullmatch(rf"/{BUCKET}/(train-\d+\.tar)", path or "")
        r = re.fullmatch(r"bytes=(\d+)-(\d*)", header or "")
        if m:
            assert r, f"a GET of {path} without a byte range ({header})"
            ranges.setdefault(m.group(1), []).append((int(r.group(1)), r.group(2)))
    assert set(ranges) == set(want), f"GETs for {sorted(ranges)}"
    sizes = json.loads((out / "sizes.json").read_text())
    probes = 0
    for shard, got in ranges.items():
        # A one-byte GET at the start is the reader learning the object's size.
        probes += sum(1 for g in got if g == (0, "0"))
        got = sorted(g for g in got if g != (0, "0"))
        ranges[shard] = got
        ends = [int(e) + 1 if e else sizes[shard] for _, e in got]
        starts = [s for s, _ in got]
        # Contiguous, no byte twice, to the end (the last range may be open).
        assert starts[0] == 0 and all(a == b for a, b in zip(ends, starts[1:])), (shard, got)
        assert min(ends[-1], sizes[shard]) == sizes[shard], (shard, got, sizes[shard])
    requests = sorted({len(g) for g in ranges.values()})
    print(f"OK: {len(samples)} samples, each once, from {len(want)} shards; node 0 read "
          f"{sorted(by_node[0])}, node 1 {sorted(by_node[1])}, none both; every shard's bytes "
          f"fetched once ({requests} ranged GETs a shard and {probes} one-byte size probes, "
          f"{sum(sizes.values()):,} bytes in all)")


if __name__ == "__main__":
    what, out = sys.argv[1], pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    if what == "serve":
        serve(out, sys.argv[3], int(sys.argv[4]))
    elif what == "train":
        train(out, int(sys.argv[3]), int(sys.argv[4]))
    else:
        check(out, int(sys.argv[3]))
