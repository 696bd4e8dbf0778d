"""On a GPU: tandem.sort of a CuPy array against cupy.sort and torch.sort (2^28 u32), and tandem's
group-by of GPU keys against torch.unique(return_counts=True) and cupy.unique (2^27 int32 keys over
2^20 values); anchors in the same run on the same data, results checked. Skips cleanly without a
GPU, CuPy or PyTorch (each anchor runs when its library is there).

    PYTHONPATH=build/gpu/python python3 python/bench/bench_gpu.py [--quick]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import tandem  # noqa: E402
from common import Bench  # noqa: E402


def libraries(b):
    try:
        import cupy
    except ImportError:
        b.skip("no CuPy")
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            b.skip("no GPU")
    except Exception as e:  # no driver
        b.skip(f"no GPU ({e})")
    if not tandem._tandem.cuda_built:
        b.skip("this build of tandem has no CUDA")
    try:
        import torch
        torch = torch if torch.cuda.is_available() else None
    except ImportError:
        torch = None
    return cupy, torch


def sort_in_place(cupy, source, work, sort, repeat):
    """Median seconds of sort() on work, refilled from source before each run (events around the sort)."""
    times = []
    for r in range(repeat + 1):
        work[...] = source
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        sort()
        end.record()
        end.synchronize()
        if r:  # the first run warms up
            times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return float(np.median(times))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="2^24 elements and 2^23 keys")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    b = Bench("python_gpu")
    cupy, torch = libraries(b)
    sync = cupy.cuda.get_current_stream().synchronize
    print(f"GPU: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}; CuPy {cupy.__version__}"
          f"{'; PyTorch ' + torch.__version__ if torch else '; no PyTorch'}\n")

    # ---- sort ----------------------------------------------------------------------------------
    n = 1 << (24 if args.quick else 28)
    a = cupy.random.randint(0, 2**32, n, dtype=cupy.uint64).astype(cupy.uint32)
    expected = cupy.sort(a)
    t_tandem = b.time(lambda: tandem.sort(a), repeat=args.repeat, sync=sync)
    b.check(bool(cupy.array_equal(tandem.sort(a), expected)), "tandem.sort != cupy.sort")
    t_cupy = b.time(lambda: cupy.sort(a), repeat=args.repeat, sync=sync)
    b.row("tandem.sort (sorted copy)", f"{t_tandem * 1e3:.2f}", "")
    b.row("cupy.sort", f"{t_cupy * 1e3:.2f}", f"{t_cupy / t_tandem:.2f}x")
    best = t_cupy
    if torch is not None:
        # torch.sort has no uint32: it sorts the same bits as int32 with the top bit flipped (the
        # same order, the same bytes), as a PyTorch user would.
        flip = cupy.uint32(1 << 31)
        t = torch.as_tensor((a ^ flip).view(cupy.int32), device="cuda")
        tsync = torch.cuda.synchronize
        t_torch = b.time(lambda: torch.sort(t), repeat=args.repeat, sync=tsync)
        back = cupy.asarray(torch.sort(t).values).view(cupy.uint32) ^ flip
        b.check(bool(cupy.array_equal(back, expected)), "torch.sort (flipped int32) != cupy.sort")
        b.row("torch.sort of int32 (values and indices)", f"{t_torch * 1e3:.2f}", f"{t_torch / t_tandem:.2f}x")
        best = min(best, t_torch)
        del t
    # In place: each run sorts a fresh copy of the unsorted keys (a sorted array scatters
    # differently); the copy is outside the timed interval (GPU events around the sort alone).
    inplace = a.copy()
    t_inplace = sort_in_place(cupy, a, inplace, lambda: tandem.sort(inplace, inplace=True), args.repeat)
    b.check(bool(cupy.array_equal(inplace, expected)), "tandem.sort(inplace=True) != cupy.sort")
    t_cupy_inplace = sort_in_place(cupy, a, inplace, inplace.sort, args.repeat)
    b.check(bool(cupy.array_equal(inplace, expected)), "ndarray.sort() != cupy.sort")
    b.row("tandem.sort(inplace=True)", f"{t_inplace * 1e3:.2f}", "")
    b.row("cupy ndarray.sort() (in place)", f"{t_cupy_inplace * 1e3:.2f}", f"{t_cupy_inplace / t_inplace:.2f}x")
    b.table([f"sort 2^{n.bit_length() - 1} uint32 on the GPU", "ms (median)", "anchor / tandem"])
    b.goal(f"sort 2^{n.bit_length() - 1} u32: best of cupy/torch / tandem", best / t_tandem, 1.5)
    del a, expected, inplace

    # ---- group-by ------------------------------------------------------------------------------
    m = 1 << (23 if args.quick else 27)
    keys = cupy.random.randint(0, 1 << 20, m, dtype=cupy.int32)
    t_tandem = b.time(lambda: tandem.groupby({"k": keys}, by="k", agg={"k": "size"}), repeat=args.repeat, sync=sync)
    got, report = tandem.groupby({"k": keys}, by="k", agg={"k": "size"}, explain=True)
    uniq, counts = cupy.unique(keys, return_counts=True)
    b.check(bool(cupy.array_equal(got["k"], uniq)) and bool(cupy.array_equal(got["count"], counts)),
            "tandem.groupby != cupy.unique")
    t_cupy = b.time(lambda: cupy.unique(keys, return_counts=True), repeat=args.repeat, sync=sync)
    b.row("tandem.groupby (size)", f"{t_tandem * 1e3:.2f}", "")
    b.row("cupy.unique(return_counts=True)", f"{t_cupy * 1e3:.2f}", f"{t_cupy / t_tandem:.2f}x")
    best = t_cupy
    if torch is not None:
        tk = torch.as_tensor(keys, device="cuda")
        t_torch = b.time(lambda: torch.unique(tk, return_counts=True), repeat=args.repeat, sync=torch.cuda.synchronize)
        b.row("torch.unique(return_counts=True)", f"{t_torch * 1e3:.2f}", f"{t_torch / t_tandem:.2f}x")
        best = min(best, t_torch)
    b.table([f"group-by 2^{m.bit_length() - 1} int32 keys over 2^20", "ms (median)", "anchor / tandem"])
    print(report.explain())
    b.goal(f"group-by 2^{m.bit_length() - 1} int32 keys: best of cupy/torch / tandem", best / t_tandem, 2.0)
    b.finish()


if __name__ == "__main__":
    main()
