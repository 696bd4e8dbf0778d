"""tandem.groupby against pandas on the db-benchmark group-by questions q1, q3 and q10, on the
benchmark's data (tandem.generate_groupby); pandas as the benchmark runs it (id1..id3 as
categories, sort=False, observed=True, dropna=False). tandem gets the same DataFrame, so its time
includes reading the columns out of pandas; its own compute time (the Report's) is shown beside.
Results are checked against pandas'.

    PYTHONPATH=build/cpu/python /usr/bin/python3 python/bench/bench_groupby_cpu.py [--rows 1e7] [--k 100]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import tandem  # noqa: E402
from common import Bench  # noqa: E402

QUESTIONS = {
    "q1": (["id1"], {"v1": "sum"}),
    "q3": (["id3"], {"v1": "sum", "v3": "mean"}),
    "q10": (["id1", "id2", "id3", "id4", "id5", "id6"], {"v3": "sum", "v1": "size"}),
}


def pandas_answer(x, by, agg):
    pandas_agg = {col: ("size" if f == "size" else f) for col, f in agg.items()}
    return x.groupby(by, as_index=False, sort=False, observed=True, dropna=False).agg(pandas_agg)


def check(b, q, got, ans, by, agg):
    # Categorical keys sort by their categories' order, which pandas 1.x leaves in order of
    # appearance after a group-by: sort the answer by the strings, as tandem's result is.
    ans = ans.assign(**{k: ans[k].astype(str) for k in by if ans[k].dtype == "category"})
    ans = ans.sort_values(by).reset_index(drop=True)
    b.check(len(got) == len(ans), f"{q}: {len(got)} groups, pandas {len(ans)}")
    if len(got) != len(ans):
        return
    for key in by:
        b.check(np.array_equal(got[key].astype(str).to_numpy(), ans[key].astype(str).to_numpy()), f"{q}: keys {key}")
    for col, f in agg.items():
        mine = got["count" if f == "size" else f"{f}_{col}"].to_numpy(dtype=float)
        theirs = ans[col].to_numpy(dtype=float)
        b.check(np.allclose(mine, theirs, rtol=1e-9, atol=1e-6), f"{q}: {f}({col})")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=float, default=1e7)
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--device", default="cpu", help="tandem's device (cpu: the CPU engine even where a GPU exists)")
    args = p.parse_args()
    b = Bench("python_groupby_cpu")
    import pandas as pd

    t0 = time.perf_counter()
    x = tandem.generate_groupby(rows=int(args.rows), k=args.k, seed=1)
    for c in ("id1", "id2", "id3"):
        x[c] = x[c].astype("category")
    print(f"db-benchmark group-by data: {len(x):,} rows, k={args.k}, made in {time.perf_counter() - t0:.1f} s; "
          f"pandas {pd.__version__}; tandem on {tandem.info()['cpu']['physical_cores']} physical cores\n")
    for q, (by, agg) in QUESTIONS.items():
        t_pd = b.time(lambda: pandas_answer(x, by, agg), repeat=args.repeat)
        t_td = b.time(lambda: tandem.groupby(x, by=by, agg=agg, device=args.device), repeat=args.repeat)
        got, report = tandem.groupby(x, by=by, agg=agg, device=args.device, explain=True)
        check(b, q, got, pandas_answer(x, by, agg), by, agg)
        compute = report.total_seconds
        b.row(q, f"{', '.join(by)}", f"{len(got):,}", f"{t_pd:.3f}", f"{t_td:.3f}", f"{compute:.3f}", f"{t_pd / t_td:.2f}x")
        b.info(f"{q} pandas / tandem (DataFrame in and out)", t_pd / t_td, "x")
    b.table(["question", "by", "groups", "pandas s", "tandem s", "tandem compute s", "pandas / tandem"])
    b.finish()


if __name__ == "__main__":
    main()
