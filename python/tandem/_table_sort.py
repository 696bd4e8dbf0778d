"""tandem.sort_values: pandas' DataFrame.sort_values by several keys, with tandem's table sort;
tandem.sort_csv: the same order for a CSV file, file to file within a memory limit."""
import os
from collections.abc import Mapping

import numpy as np

from . import _tandem
from ._arrays import threads_arg, with_report
from ._tables import _pandas, _series_column


def _key_column(name, s, pd):
    """A key column as the library takes it. Categoricals sort by their categories' order, as pandas
    sorts them: their codes are the key (-1, pandas' missing code, is missing)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        codes = np.ascontiguousarray(s.cat.codes.to_numpy(), dtype=np.int64)
        missing = codes < 0
        return ("numbers", name, codes, missing if missing.any() else None)
    return _series_column(name, s, pd)


def _take_frame(df, rows, pd, threads):
    """df.take(rows): numpy-backed columns (numbers, datetimes, Python objects) gathered by tandem
    on every core, the others (categoricals, nullable and Arrow-backed columns) and the index by
    pandas. Small frames are pandas' alone."""
    if len(df) < 1 << 16 or df.shape[1] == 0:
        return df.take(rows)
    data = {}
    for i in range(df.shape[1]):
        s = df.iloc[:, i]
        if isinstance(s.dtype, np.dtype) and s.dtype.kind in "biufcmMO":
            data[i] = _tandem._take(np.ascontiguousarray(s.to_numpy()), rows, threads)
        else:
            data[i] = s.array.take(rows)
    out = pd.DataFrame(data, copy=False)
    out.columns = df.columns
    out.index = _taken_index(df.index, rows, pd)
    out.attrs = dict(df.attrs)
    return out


def _taken_index(index, rows, pd):
    """index.take(rows). A RangeIndex's labels are computed from the rows: pandas' take first
    makes an array of the whole range (0.3-0.8 s of a 10^7-row sort on two cores)."""
    if isinstance(index, pd.RangeIndex):
        labels = rows if (index.start, index.step) == (0, 1) else index.start + index.step * rows
        return pd.Index(labels, name=index.name, copy=False)
    return index.take(rows)


def _ascending_list(ascending, keys):
    if isinstance(ascending, (bool, np.bool_)):
        return [bool(ascending)] * keys
    ascending = list(ascending)
    if len(ascending) != keys:
        raise ValueError(f"sort_values: {len(ascending)} values in ascending for {keys} keys in by")
    if not all(isinstance(a, (bool, np.bool_)) for a in ascending):
        raise ValueError(f"sort_values: ascending must be a bool or a list of bools, got {ascending!r}")
    return [bool(a) for a in ascending]


def sort_values(df, by, *, ascending=True, na_position="last", kind="stable", ignore_index=False, limit=None,
                threads=None, explain=False, device="auto"):
    """pandas' df.sort_values(by, ascending=..., na_position=..., kind="stable"), sorted by tandem.

    df: a pandas DataFrame; by: a column name or a list of them; ascending: a bool or one per key;
    na_position: "last" or "first". Missing values are pandas' (NaN, None, pandas.NA, NaT-free masked
    rows): NaN in a float key is missing, as pandas has it, and goes with the others to na_position
    in either direction. Strings compare by code point (their UTF-8 bytes), categoricals by their
    categories' order. The sort is always stable (kind is accepted for pandas' signature; every kind
    gives the stable answer). Returns a DataFrame with every column and the index labels in the new
    order (ignore_index=True: a fresh 0..n-1 index); limit=k keeps only the first k rows (the rest
    is not sorted). device: where the row order is found: "cpu", "gpu" (the key columns copied to
    the GPU, strings ranked there; tandem.NoDeviceError without one) or "auto" (the GPU for 2**22
    rows or more where one is present). explain=True returns (DataFrame, tandem.Report)."""
    pd = _pandas()
    if pd is None or not isinstance(df, pd.DataFrame):
        raise TypeError(f"sort_values: expected a pandas DataFrame, got {type(df).__name__}")
    by = [by] if not isinstance(by, (list, tuple)) else list(by)
    if not by:
        raise ValueError("sort_values: by names no column")
    asc = _ascending_list(ascending, len(by))
    if na_position not in ("last", "first"):
        raise ValueError(f"sort_values: na_position must be 'last' or 'first', got {na_position!r}")
    if kind not in ("stable", "mergesort", "quicksort", "heapsort"):
        raise ValueError(f"sort_values: kind must be stable, mergesort, quicksort or heapsort, got {kind!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0):
        raise ValueError(f"sort_values: limit must be a non-negative integer or None, got {limit!r}")
    columns = []
    for i, name in enumerate(by):
        if name not in df.columns:
            raise KeyError(name)
        columns.append(_key_column(f"key{i}", df[name], pd))  # positional names: any label, repeats too
    rows, report = _tandem._sort_rows(columns, [(f"key{i}", not a) for i, a in enumerate(asc)],
                                      na_position == "first", None if limit is None else int(limit),
                                      threads_arg(threads), device)
    result = _take_frame(df, rows, pd, threads_arg(threads))
    if ignore_index:
        result = result.reset_index(drop=True)
    return with_report(result, report, explain)


def _memory_limit_arg(memory_limit):
    """Bytes from an integer or a size such as "200M" or "2G" (K, M, G, T: powers of 1024)."""
    if memory_limit is None:
        return 0
    if isinstance(memory_limit, str):
        text = memory_limit.strip().upper().removesuffix("B")
        scale = 1
        if text and text[-1] in "KMGT":
            scale = 1024 ** ("KMGT".index(text[-1]) + 1)
            text = text[:-1]
        try:
            value = float(text) * scale
        except ValueError:
            raise ValueError(f"sort_csv: memory_limit must be bytes or a size such as '200M', got {memory_limit!r}")
        memory_limit = int(value)
    if isinstance(memory_limit, bool) or not isinstance(memory_limit, (int, np.integer)) or memory_limit <= 0:
        raise ValueError(f"sort_csv: memory_limit must be a positive number of bytes or None, got {memory_limit!r}")
    return int(memory_limit)


def sort_csv(path, by, *, out, ascending=True, na_position="last", limit=None, memory_limit=None, temp_dir=None,
             schema=None, delimiter=None, threads=None, explain=False):
    """Sorts a CSV file into another, file to file, as sort_values sorts the DataFrame that
    pandas.read_csv gives for it (stable; empty fields and NaN are missing and go to na_position in
    either direction; strings by code point), within a memory limit.

    by: a column name or a list of them; ascending: a bool or one per key; out: the sorted file's
    path (written under a temporary name and renamed when done: a failure leaves no output);
    memory_limit: bytes, or a size such as "200M" (default: half the available memory). A file that
    fits is sorted in memory; a larger one in sorted runs under temp_dir (default $TMPDIR, else /tmp)
    that are merged and removed. schema and delimiter as tandem.read_csv takes them; limit=k writes
    only the first k rows. Returns the number of rows written ((rows, tandem.Report) with
    explain=True). A key column the file lacks raises tandem.UsageError (a ValueError) naming it."""
    by = [by] if isinstance(by, str) else list(by)
    if not by:
        raise ValueError("sort_csv: by names no column")
    if not all(isinstance(name, str) for name in by):
        raise ValueError(f"sort_csv: by must name columns by strings, got {by!r}")
    asc = _ascending_list(ascending, len(by))
    if na_position not in ("last", "first"):
        raise ValueError(f"sort_csv: na_position must be 'last' or 'first', got {na_position!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0):
        raise ValueError(f"sort_csv: limit must be a non-negative integer or None, got {limit!r}")
    if isinstance(schema, Mapping):
        schema = ",".join(f"{name}:{kind}" for name, kind in schema.items())
    rows, _, _, report = _tandem._sort_csv(
        os.fspath(path), os.fspath(out), [(name, not a) for name, a in zip(by, asc)], na_position == "first",
        None if limit is None else int(limit), _memory_limit_arg(memory_limit),
        "" if temp_dir is None else os.fspath(temp_dir), schema or "", delimiter or "", threads_arg(threads))
    return with_report(rows, report, explain)
