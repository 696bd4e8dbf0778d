"""tandem.sort_values against pandas' DataFrame.sort_values(kind="stable") on the db-benchmark
group-by data (tandem.generate_groupby; id1..id3 as object strings, as pandas.read_csv gives them),
the whole frame returned in both. Results are checked for equality with pandas'.

    PYTHONPATH=build/cpu/python /usr/bin/python3 python/bench/bench_sort_values.py [--rows 1e7] [--threads 2]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import tandem  # noqa: E402
from common import Bench  # noqa: E402

QUERIES = {
    "id3": (["id3"], True),
    "id1, id2, v3 desc": (["id1", "id2", "v3"], [True, True, False]),
    "v3": (["v3"], True),
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=float, default=1e7)
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args()
    b = Bench("python_sort_values")
    import pandas as pd

    t0 = time.perf_counter()
    x = tandem.generate_groupby(rows=int(args.rows), k=args.k, seed=1)
    print(f"db-benchmark group-by data: {len(x):,} rows, k={args.k}, made in {time.perf_counter() - t0:.1f} s; "
          f"pandas {pd.__version__}\n")
    for name, (by, ascending) in QUERIES.items():
        t_pd = b.time(lambda: x.sort_values(by, ascending=ascending, kind="stable"), repeat=args.repeat, warmup=0)
        t_td = b.time(lambda: tandem.sort_values(x, by, ascending=ascending, threads=args.threads), repeat=args.repeat)
        got = tandem.sort_values(x, by, ascending=ascending, threads=args.threads)
        want = x.sort_values(by, ascending=ascending, kind="stable")
        b.check(got.index.equals(want.index) and got.equals(want), f"{name}: the frame differs from pandas'")
        b.row(name, f"{t_pd:.3f}", f"{t_td:.3f}", f"{t_pd / t_td:.2f}x")
        b.goal(f"sort_values by {name}: pandas / tandem", t_pd / t_td, 3.0)
    b.table(["by", "pandas s", "tandem s", "pandas / tandem"])
    b.finish()


if __name__ == "__main__":
    main()
