"""tandem on Dask: tandem's group-by and sort as the per-partition engine inside an existing Dask
cluster (the integration dask-cudf does for cuDF), not a new scheduler.

    import tandem.dask
    tandem.dask.groupby(ddf, ["id1"], {"v1": "sum"})      # a Dask DataFrame, keys as columns
    tandem.dask.sort_values(ddf, "v1")                    # sampled splitters, then a shuffle

Aggregations that combine (size, count, sum, min, max; mean as sum and count) run on each
partition, and the partial groups are grouped again by tandem in a tree of `split_every`; the
others (median, quantile, nunique, var, std, first, last, top) shuffle the rows by key first, so
that each key's rows meet in one partition, in their original order."""
import numpy as np

from . import _tables
from ._arrays import threads_arg

try:
    import dask
    import dask.dataframe as dd
    from dask.dataframe.shuffle import rearrange_by_column
except ImportError as e:  # pragma: no cover - exercised where dask is absent
    raise ImportError(f"tandem.dask needs dask[dataframe] (Debian: python3-dask, python3-distributed): {e}") from e

_COMBINABLE = {"size", "count", "sum", "min", "max", "mean"}
_POSITION = "__tandem_row"


def _checked_device(device):
    if device not in ("auto", "cpu", "gpu"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'gpu', got {device!r}")
    return device


def _named(aggs):
    """The aggregations with their output names filled in (tandem's defaults: sum_v1, count, ...)."""
    out = []
    for op, column, q, n, name in aggs:
        if not name:
            name = "count" if op == "size" else f"{op}_{column}" if op not in ("quantile", "top") else ""
        out.append((op, column, q, n, name))
    return out


def _frame_groupby(df, by, aggs, device, threads):
    """tandem.groupby of one pandas partition with (op, column, q, n, name) aggregations."""
    needed = _tables._needed(by, aggs)
    columns, coded = _tables._rank_coded_keys(_tables._host_columns(df, needed), by, aggs,
                                              {str(n): df[n].dtype for n in needed})
    return _tables._host_groupby(columns, by, aggs, device, threads_arg(threads), False, coded)


# ---- aggregations that combine: partial groups reduced in a tree --------------------------------------
def _combine_plan(aggs):
    """(partial aggregations, final aggregations, outputs): outputs are (name, column) or
    (name, (sum column, count column)) for a mean (as src/dist/groupby_plan.cpp splits them)."""
    partial, final, outputs = [], [], []
    for i, (op, column, q, n, name) in enumerate(aggs):
        part = f"__part{i}"
        if op == "mean":
            count = f"__count{i}"
            partial += [("sum", column, q, n, part), ("count", column, q, n, count)]
            final += [("sum", part, q, n, part), ("sum", count, q, n, count)]
            outputs.append((name, (part, count)))
        else:
            partial.append((op, column, q, n, part))
            final.append(("sum" if op in ("size", "count", "sum") else op, part, q, n, part))
            outputs.append((name, part))
    return partial, final, outputs


def _combine(by, final, device, threads, *parts):
    import pandas as pd
    return _frame_groupby(pd.concat(parts, ignore_index=True), by, final, device, threads)


def _finish(by, outputs, df):
    import pandas as pd
    out = {b: df[b] for b in by}
    for name, source in outputs:
        if isinstance(source, tuple):
            total, count = df[source[0]].astype("float64"), df[source[1]]
            out[name] = total / count.where(count != 0, np.nan)
        else:
            out[name] = df[source]
    return pd.DataFrame(out)


def _tree_groupby(ddf, by, aggs, device, threads, split_every):
    partial, final, outputs = _combine_plan(aggs)
    level = [dask.delayed(_frame_groupby)(p, by, partial, device, threads) for p in ddf.to_delayed()]
    while len(level) > 1:
        level = [dask.delayed(_combine)(by, final, device, threads, *level[i:i + split_every])
                 for i in range(0, len(level), split_every)]
    result = dask.delayed(_finish)(by, outputs, level[0])
    meta = _finish(by, outputs, _frame_groupby(_frame_groupby(ddf._meta, by, partial, device, threads), by, final,
                                               device, threads))
    return dd.from_delayed([result], meta=meta, verify_meta=False)


# ---- the rest: rows shuffled by key, then grouped where they meet -----------------------------------------
def _with_position(df, partition_info=None):
    number = partition_info["number"] if partition_info else 0
    return df.assign(**{_POSITION: (np.int64(number) << 40) + np.arange(len(df), dtype=np.int64)})


def _grouped_in_order(df, by, aggs, device, threads):
    if _POSITION in df:
        df = df.sort_values(_POSITION, kind="stable").drop(columns=_POSITION)
    return _frame_groupby(df, by, aggs, device, threads)


def _shuffled_groupby(ddf, by, aggs, device, threads, npartitions):
    ordered = any(op in ("first", "last") for op, _, _, _, _ in aggs)
    frame = ddf[_tables._needed(by, aggs)]
    if ordered:  # a shuffle does not keep the rows' order: their position goes with them
        frame = frame.map_partitions(_with_position, meta=_with_position(frame._meta))
    shuffled = frame.shuffle(on=list(by), npartitions=npartitions or ddf.npartitions)
    meta = _grouped_in_order(shuffled._meta, by, aggs, device, threads)
    return shuffled.map_partitions(_grouped_in_order, by, aggs, device, threads, meta=meta)


def groupby(ddf, by, agg="count()", *, device="cpu", threads=None, split_every=8, npartitions=None):
    """Group-by of a Dask DataFrame with tandem on each partition. by, agg: as tandem.groupby.
    device: each worker's tandem device ('cpu', 'gpu' for a worker that owns one, 'auto').
    split_every: partial results combined per tree node; npartitions: the shuffle's output
    partitions (default: the input's). Returns a Dask DataFrame with the keys as columns and the
    aggregates named as tandem.groupby names them (one partition for combinable aggregations, sorted
    by the keys; otherwise one partition per shuffle bucket, each sorted by its keys)."""
    by = [by] if isinstance(by, str) else list(by)
    aggs = _named(_tables._aggregations(agg))
    device = _checked_device(device)
    if split_every < 2:
        raise ValueError(f"split_every must be at least 2, got {split_every}")
    if all(op in _COMBINABLE for op, _, _, _, _ in aggs) and all(name for *_, name in aggs):
        return _tree_groupby(ddf, by, aggs, device, threads, split_every)
    return _shuffled_groupby(ddf, by, aggs, device, threads, npartitions)


# ---- sort ------------------------------------------------------------------------------------------------
def _sample(df, column, size):
    values = df[column].dropna().to_numpy()
    if len(values) <= size:
        return values
    return values[np.random.default_rng(len(values)).choice(len(values), size, replace=False)]


def _assign_bucket(df, column, splitters, ascending):
    keys = df[column].to_numpy()
    bucket = np.searchsorted(splitters, keys, side="right")
    if keys.dtype.kind == "f":
        bucket = np.where(np.isnan(keys), len(splitters), bucket)  # missing keys last
    if not ascending:
        bucket = np.where(np.isnan(keys), len(splitters), len(splitters) - bucket) if keys.dtype.kind == "f" \
            else len(splitters) - bucket
    return df.assign(_partitions=bucket.astype(np.int64))


def _sort_partition(df, by, ascending):
    df = df.drop(columns="_partitions") if "_partitions" in df else df
    if _POSITION in df:  # restore the input order first: the sort is stable, as Dask's
        df = df.sort_values(_POSITION, kind="stable").drop(columns=_POSITION)
    key = df[by[0]].to_numpy()
    if len(by) == 1 and ascending and key.dtype.kind in "iuf":
        from . import argsort
        return df.iloc[argsort(key)]
    return df.sort_values(by, ascending=ascending, kind="stable")


def sort_values(ddf, by, ascending=True, *, npartitions=None, sample_per_partition=1000):
    """A Dask DataFrame sorted by `by` (a column or a list; splitters come from the first) in
    `npartitions` ranges: splitters drawn from a sample of every partition, rows shuffled to their
    range, each range sorted by tandem (one numeric key, ascending) or stably by pandas. Missing keys
    come last, as in pandas."""
    by = [by] if isinstance(by, str) else list(by)
    n = npartitions or ddf.npartitions
    samples = dask.compute(*[dask.delayed(_sample)(p, by[0], sample_per_partition) for p in ddf.to_delayed()])
    pooled = np.sort(np.concatenate(samples)) if samples else np.array([])
    if len(pooled) == 0 or n == 1:
        splitters = pooled[:0]
    else:
        splitters = np.unique(pooled[np.linspace(0, len(pooled) - 1, n + 1).astype(np.int64)[1:-1]])
    positioned = ddf.map_partitions(_with_position, meta=_with_position(ddf._meta))
    bucketed = positioned.map_partitions(_assign_bucket, by[0], splitters, ascending,
                                         meta=_assign_bucket(positioned._meta, by[0], splitters, ascending))
    # "_partitions": the name Dask's task shuffle takes as the output partition itself (others are hashed)
    shuffled = rearrange_by_column(bucketed, "_partitions", npartitions=len(splitters) + 1, ignore_index=False)
    return shuffled.map_partitions(_sort_partition, by, ascending, meta=ddf._meta)
