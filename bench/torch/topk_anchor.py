#!/usr/bin/env python3
"""PyTorch anchor of bench_topk: the same top-k queries over the same ranked lists, timed on the
GPU the way users write them, every answer checked against tandem's.

    topk_anchor.py JOB.json [--backend auto|torch|numpy]
    topk_anchor.py --probe      {"ready": true} or {"skipped": why}, without loading data

JOB.json (bench_topk writes it):
    {"lists": "FILE.tkl", "k": K, "reps": R, "warmup": W,
     "expect": [[id, score], ...],                        # tandem's answer for the plain sum
     "batch": {"weights": [[w_1..w_n], ...],              # optional: one weight vector a query
               "expect": {"Q": [[id, score], ...], ...}}} # tandem's answers for a few queries Q

What is timed (median of R runs after W untimed ones, torch.cuda.synchronize around each; the k
results copied to the host, as tandem's results are):
    scatter_topk  zeros(m); index_add_ of all n*m (id, score) entries; topk
    dense_topk    a dense [m, n] score table built once (untimed); sum over n; topk
    batch_matmul  [m, n] @ [n, Q]; topk along the objects (dim 0) for all Q at once
    batch_loop    per query: [m, n] @ [n]; topk

Prints one JSON object on its last line of output. Exit 0: answers agree (or skipped: no torch,
no CUDA); 1: an answer differs from tandem's; 2: the job or the lists file is unusable.
The numpy backend runs the same computations on the CPU: for tests of the loader and the checks.
"""
import argparse
import json
import os
import struct
import sys
import time

import numpy as np

HEADER = struct.Struct("<4sIQ")  # "TKL1", u32 lists, u64 objects
ENTRY = np.dtype([("id", "<u4"), ("score", "<f4")])


class InputProblem(Exception):
    pass


def read_lists(path):
    """(ids [n, m] uint32, scores [n, m] float32) of a TKL1 file; InputProblem naming the file."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(HEADER.size)
    except OSError as e:
        raise InputProblem(f"{path}: {e.strerror}") from e
    if len(head) < HEADER.size:
        raise InputProblem(f"{path}: {len(head)} bytes, shorter than the {HEADER.size}-byte TKL1 header")
    magic, n, m = HEADER.unpack(head)
    if magic != b"TKL1":
        raise InputProblem(f"{path}: magic {magic!r} is not b'TKL1'")
    want = HEADER.size + n * m * ENTRY.itemsize
    if size != want:
        raise InputProblem(f"{path}: {size} bytes, expected {want} for {n} lists of {m} entries")
    entries = np.fromfile(path, dtype=ENTRY, offset=HEADER.size).reshape(n, m)
    ids = entries["id"].copy()
    if m and int(ids.max()) >= m:
        raise InputProblem(f"{path}: an id is >= the {m} objects")
    return ids, entries["score"].copy()


def compare(got, expect, tol):
    """Empty when `got` and tandem's `expect` (lists of (id, score)) are the same top k up to ties:
    the sorted scores agree within tol, and an id in only one of them scores within tol of the
    k-th score. Otherwise the first difference, in words."""
    if len(got) != len(expect):
        return f"{len(got)} results, tandem {len(expect)}"
    gs = sorted((s for _, s in got), reverse=True)
    es = sorted((s for _, s in expect), reverse=True)
    for rank, (a, b) in enumerate(zip(gs, es)):
        if abs(a - b) > tol * max(1.0, abs(b)):
            return f"rank {rank}: score {a!r}, tandem {b!r}"
    if not es:
        return ""
    kth = es[-1]
    slack = tol * max(1.0, abs(kth))
    got_ids = {i for i, _ in got}
    expect_ids = {i for i, _ in expect}
    for i, s in expect:
        if i not in got_ids and s > kth + slack:
            return f"id {i} (tandem score {s!r}, above the k-th {kth!r}) is missing"
    for i, s in got:
        if i not in expect_ids and abs(s - kth) > slack:
            return f"id {i} (score {s!r}) is not in tandem's answer and does not tie its k-th score {kth!r}"
    return ""


def summary(samples):
    s = sorted(samples)
    return {"median_s": s[len(s) // 2] if len(s) % 2 else 0.5 * (s[len(s) // 2 - 1] + s[len(s) // 2]),
            "min_s": s[0], "max_s": s[-1], "samples": len(s)}


def timed(fn, reps, warmup, sync):
    """(statistics of fn's wall time, fn's last result)."""
    out = None
    for _ in range(warmup):
        out = fn()
    samples = []
    for _ in range(reps):
        sync()
        t = time.perf_counter()
        out = fn()
        sync()
        samples.append(time.perf_counter() - t)
    return summary(samples), out


class TorchBackend:
    """The lists on the GPU: flat int64 ids and scores (scatter), a dense [m, n] table (the rest)."""

    def __init__(self, torch, ids, scores):
        self.torch = torch
        torch.backends.cuda.matmul.allow_tf32 = False  # float32 products, not TF32's 10-bit mantissa
        dev = torch.device("cuda")
        n, m = ids.shape
        self.m = m
        tid = torch.from_numpy(ids.astype(np.int64)).to(dev)
        tsc = torch.from_numpy(scores).to(dev)
        self.flat_ids, self.flat_scores = tid.reshape(-1), tsc.reshape(-1)
        by_list = torch.empty((n, m), dtype=torch.float32, device=dev)
        by_list.scatter_(1, tid, tsc)  # by_list[i, id] = score of id in list i
        self.dense = by_list.t().contiguous()  # one row of n scores per object
        del by_list
        torch.cuda.synchronize()
        self.name = f"torch {torch.__version__} on {torch.cuda.get_device_name(dev)}"

    def sync(self):
        self.torch.cuda.synchronize()

    def pairs(self, values, indices):
        return list(zip(indices.cpu().tolist(), values.cpu().tolist()))

    def scatter_topk(self, k):
        s = self.torch.zeros(self.m, dtype=self.torch.float32, device=self.flat_ids.device)
        s.index_add_(0, self.flat_ids, self.flat_scores)
        v, i = self.torch.topk(s, k)
        return v.cpu(), i.cpu()

    def dense_topk(self, k):
        v, i = self.torch.topk(self.dense.sum(dim=1), k)
        return v.cpu(), i.cpu()

    def weights(self, w):
        return self.torch.tensor(w, dtype=self.torch.float32, device=self.dense.device).t().contiguous()  # [n, Q]

    def batch_matmul(self, W, k):
        v, i = self.torch.topk(self.dense @ W, k, dim=0)  # [k, Q]
        return v.cpu(), i.cpu()

    def batch_loop(self, W, k):
        out = [self.torch.topk(self.dense @ W[:, q], k) for q in range(W.shape[1])]
        return [(v.cpu(), i.cpu()) for v, i in out]


class NumpyBackend:
    """The same computations with numpy on the CPU (float64 sums)."""

    name = f"numpy {np.__version__} on the CPU"

    def __init__(self, ids, scores):
        n, m = ids.shape
        self.m = m
        self.flat_ids, self.flat_scores = ids.reshape(-1), scores.reshape(-1).astype(np.float64)
        self.dense = np.empty((m, n), dtype=np.float64)
        for i in range(n):
            self.dense[ids[i], i] = scores[i]

    def sync(self):
        pass

    @staticmethod
    def topk(s, k):  # along axis 0; ties to the smaller id, as tandem's
        i = np.argsort(-s, axis=0, kind="stable")[:k]
        return np.take_along_axis(s, i, axis=0), i

    def pairs(self, values, indices):
        return list(zip(indices.tolist(), values.tolist()))

    def scatter_topk(self, k):
        return self.topk(np.bincount(self.flat_ids, weights=self.flat_scores, minlength=self.m), k)

    def dense_topk(self, k):
        return self.topk(self.dense.sum(axis=1), k)

    def weights(self, w):
        return np.asarray(w, dtype=np.float64).T  # [n, Q]

    def batch_matmul(self, W, k):
        return self.topk(self.dense @ W, k)

    def batch_loop(self, W, k):
        return [self.topk(self.dense @ W[:, q], k) for q in range(W.shape[1])]


def find_torch():
    """(the torch module, None) when it can run on a GPU, else (None, the reason)."""
    try:
        import torch
    except ImportError:
        return None, "no torch"
    if not torch.cuda.is_available():
        return None, "torch without CUDA"
    return torch, None


def load_job(path):
    try:
        with open(path) as f:
            job = json.load(f)
        for key in ("lists", "k", "expect"):
            if key not in job:
                raise InputProblem(f"{path}: no \"{key}\"")
        return job
    except (OSError, ValueError) as e:
        raise InputProblem(f"{path}: {e}") from e


def run(job, backend, tol):
    k, reps, warmup = int(job["k"]), int(job.get("reps", 5)), int(job.get("warmup", 1))
    out = {"backend": backend.name, "k": k, "m": backend.m, "problems": []}

    def check(what, result, expect):
        why = compare(backend.pairs(*result), [tuple(e) for e in expect], tol)
        if why:
            out["problems"].append(f"{what}: {why}")

    for name in ("scatter_topk", "dense_topk"):
        out[name], result = timed(lambda: getattr(backend, name)(k), reps, warmup, backend.sync)
        check(name, result, job["expect"])
    batch = job.get("batch")
    if batch:
        W = backend.weights(batch["weights"])
        out["queries"] = W.shape[1]
        out["batch_matmul"], (v, i) = timed(lambda: backend.batch_matmul(W, k), reps, warmup, backend.sync)
        out["batch_loop"], each = timed(lambda: backend.batch_loop(W, k), reps, warmup, backend.sync)
        for q, expect in batch.get("expect", {}).items():
            q = int(q)
            check(f"batch_matmul query {q}", (v[:, q], i[:, q]), expect)
            check(f"batch_loop query {q}", each[q], expect)
        out["checked_queries"] = sorted(int(q) for q in batch.get("expect", {}))
    out["ok"] = not out["problems"]
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("job", nargs="?")
    p.add_argument("--probe", action="store_true", help="only say whether torch can run on a GPU")
    p.add_argument("--backend", choices=("auto", "torch", "numpy"), default="auto",
                   help="auto: torch on CUDA when importable, else report skipped")
    p.add_argument("--tolerance", type=float, default=1e-5,
                   help="relative score tolerance (float32 sums against tandem's exact ones)")
    a = p.parse_args(argv)
    torch, skipped = (None, None) if a.backend == "numpy" else find_torch()
    if skipped and a.backend == "torch":
        p.error(f"--backend torch: {skipped}")
    if a.probe or not a.job:
        if not a.probe:
            p.error("a job file or --probe")
        print(json.dumps({"skipped": skipped} if skipped else {"ready": True}))
        return 0
    try:
        job = load_job(a.job)
        ids, scores = read_lists(job["lists"])
        if not 1 <= int(job["k"]) <= ids.shape[1]:
            raise InputProblem(f"{a.job}: k = {job['k']} outside 1..{ids.shape[1]}")
    except InputProblem as e:
        print(json.dumps({"error": str(e)}))
        return 2
    if skipped:
        print(json.dumps({"skipped": skipped}))
        return 0
    backend = TorchBackend(torch, ids, scores) if torch else NumpyBackend(ids, scores)
    out = run(job, backend, a.tolerance)
    print(json.dumps(out))
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
