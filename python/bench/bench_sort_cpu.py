"""tandem.sort against numpy.sort on the CPU (the anchor, same run, same data), results checked;
and the cost of one call on 16 elements.

    PYTHONPATH=build/cpu/python /usr/bin/python3 python/bench/bench_sort_cpu.py [--quick]
"""
import argparse
import os
import sys
import timeit

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import tandem  # noqa: E402
from common import Bench  # noqa: E402


def data(dtype, n, seed=1):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(n).astype(dtype)
    return rng.integers(0, np.iinfo(dtype).max, n, dtype=dtype, endpoint=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="2^20 and 2^22 elements instead of 2^24 and 2^26")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    b = Bench("python_sort_cpu")
    sizes = [20, 22] if args.quick else [24, 26]
    print(f"tandem.sort vs numpy.sort; {tandem.info()['cpu']['physical_cores']} physical cores; "
          f"median of {args.repeat} runs of a sorted copy each\n")
    ratios = []
    for log_n in sizes:
        for dtype in (np.uint32, np.float64):
            a = data(dtype, 1 << log_n)
            expected = np.sort(a)
            t_np = b.time(lambda: np.sort(a), repeat=args.repeat)
            t_td = b.time(lambda: tandem.sort(a), repeat=args.repeat)
            b.check(np.array_equal(tandem.sort(a), expected), f"2^{log_n} {np.dtype(dtype).name}: tandem.sort != numpy.sort")
            _, report = tandem.sort(a, explain=True)
            ratios.append(t_np / t_td)
            b.row(f"2^{log_n}", np.dtype(dtype).name, f"{t_np * 1e3:.1f}", f"{t_td * 1e3:.1f}", f"{t_np / t_td:.2f}x",
                  report.details.get("path", "?"))
            b.info(f"sort 2^{log_n} {np.dtype(dtype).name}: numpy / tandem", t_np / t_td, "x")
    b.table(["n", "dtype", "numpy ms", "tandem ms", "speed-up", "tandem path"])

    small = data(np.float64, 16)
    calls = 20000
    # The minimum of several rounds: other processes on the machine only ever add time.
    t_td = min(timeit.repeat(lambda: tandem.sort(small), number=calls, repeat=7)) / calls
    t_np = min(timeit.repeat(lambda: np.sort(small), number=calls, repeat=7)) / calls
    b.check(np.array_equal(tandem.sort(small), np.sort(small)), "16 elements: tandem.sort != numpy.sort")
    b.row("tandem.sort", f"{t_td * 1e6:.2f}")
    b.row("numpy.sort", f"{t_np * 1e6:.2f}")
    b.table(["16 float64 elements, one call", "us (best of 7 rounds)"])
    b.goal("call overhead, 16-element sort", t_td * 1e6, 5.0, unit=" us", higher_is_better=False)
    b.finish()


if __name__ == "__main__":
    main()
