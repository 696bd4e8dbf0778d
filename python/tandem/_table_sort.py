"""tandem.sort_values: pandas' DataFrame.sort_values by several keys, with tandem's table sort."""
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
    result = df.take(rows)
    if ignore_index:
        result = result.reset_index(drop=True)
    return with_report(result, report, explain)
