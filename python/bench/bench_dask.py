"""tandem.dask.groupby against Dask's own group-by (pandas per partition) on the same
distributed.LocalCluster, db-benchmark q1, q3 and q10 on the benchmark's data in partitions held by
the workers (persisted first, so both read the same partitions). Answers are checked.

    PYTHONPATH=build/cpu/python /usr/bin/python3 python/bench/bench_dask.py [--rows 1e7] [--partitions 8] [--workers 2]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import tandem  # noqa: E402
from common import Bench  # noqa: E402

QUESTIONS = {
    "q1": (["id1"], {"v1": "sum"}),
    "q3": (["id3"], {"v1": "sum", "v3": "mean"}),
    "q10": (["id1", "id2", "id3", "id4", "id5", "id6"], {"v3": "sum", "v1": "count"}),
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=float, default=1e7)
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    b = Bench("python_dask")
    try:
        import dask.dataframe as dd
        import distributed
        import tandem.dask
    except ImportError as e:
        b.skip(f"Dask is not installed ({e})")
    x = tandem.generate_groupby(rows=int(args.rows), k=args.k, seed=1)
    for c in ("id1", "id2", "id3"):
        x[c] = x[c].astype("category")
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        ddf = dd.from_pandas(x, npartitions=args.partitions).persist()
        distributed.wait(ddf)
        print(f"{len(x):,} rows in {args.partitions} partitions on {args.workers} worker processes "
              f"(1 thread each); dask {client.run_on_scheduler(lambda: __import__('dask').__version__)}\n")
        for q, (by, agg) in QUESTIONS.items():
            theirs = lambda: ddf.groupby(by, observed=True, dropna=False).agg(agg).compute()  # noqa: E731
            mine = lambda: tandem.dask.groupby(ddf, by, agg, device="cpu", threads=1).compute()  # noqa: E731
            t_dask = b.time(theirs, repeat=args.repeat)
            t_td = b.time(mine, repeat=args.repeat)
            got, ans = mine(), theirs()
            b.check(len(got) == len(ans), f"{q}: {len(got)} groups, Dask {len(ans)}")
            for col, f in agg.items():
                b.check(np.isclose(got[f"{f}_{col}"].sum(), ans[col].sum(), rtol=1e-9), f"{q}: {f}({col}) total")
            b.row(q, ", ".join(by), f"{len(got):,}", f"{t_dask:.3f}", f"{t_td:.3f}", f"{t_dask / t_td:.2f}x")
            b.goal(f"{q} Dask / tandem.dask", t_dask / t_td, 2.0)
    b.table(["question", "by", "groups", "Dask s", "tandem.dask s", "Dask / tandem.dask"])
    b.finish()


if __name__ == "__main__":
    main()
