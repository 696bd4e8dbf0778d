"""tandem.groupby and tandem.generate_groupby: pandas DataFrames, dicts of arrays and GPU columns
in, pandas DataFrames (or dicts of numpy arrays without pandas) out."""
import os
from collections.abc import Mapping

import numpy as np

from . import _arrow, _device, _tandem
from ._arrays import threads_arg, with_report, work_array

_pandas_module = False  # not looked for yet


def _pandas():
    """pandas, imported on first use (it takes a while), or None when it is not installed."""
    global _pandas_module
    if _pandas_module is False:
        try:
            import pandas
            _pandas_module = pandas
        except ImportError:
            _pandas_module = None
    return _pandas_module


# ---- aggregations --------------------------------------------------------------------------------
_OPS = {"size": "count_rows", "count": "count", "sum": "sum", "mean": "mean", "min": "min", "max": "max", "var": "var",
        "std": "std", "first": "first", "last": "last", "nunique": "nunique", "median": "median",
        "quantile": "quantile", "top": "top"}
_PYTHON_NAMES = {library: python for python, library in _OPS.items()}


def _one_aggregation(column, func):
    """(op name, column, q, n, output name) from one entry of a dict spec."""
    q, n = 0.5, 1
    if isinstance(func, tuple):
        if len(func) != 2 or func[0] not in ("quantile", "top"):
            raise ValueError(f"agg of '{column}': tuples are ('quantile', q) or ('top', n), got {func!r}")
        func, arg = func
        if func == "quantile":
            q = float(arg)
        else:
            n = int(arg)
    if not isinstance(func, str) or func not in _OPS:
        raise ValueError(f"agg of '{column}': {func!r} is not one of {', '.join(_OPS)}")
    if func == "size":
        return ("size", "", q, n, "")
    return (func, column, q, n, "")


def _aggregations(agg):
    """A list of (op name, column, q, n, output name); output name "" takes the library's default."""
    if isinstance(agg, str):
        agg = [agg]
    if isinstance(agg, Mapping):
        out = []
        for column, funcs in agg.items():
            for func in (funcs if isinstance(funcs, list) else [funcs]):
                out.append(_one_aggregation(column, func))
        return out
    if isinstance(agg, (list, tuple)) and all(isinstance(a, str) for a in agg):
        out = []
        for text in agg:
            for op, column, q, n, name in _tandem._parse_aggregations(text):
                out.append((_PYTHON_NAMES[op.name], column, q, n, name))
        return out
    raise TypeError("agg: expected a dict {column: func or [funcs]}, or tandem's text form 'sum(v1),count()'")


def _library_aggregations(aggs):
    return [(getattr(_tandem.AggOp, _OPS[op]), str(column), q, n, name) for op, column, q, n, name in aggs]


# ---- columns in ------------------------------------------------------------------------------------
def _numbers(name, values, missing=None):
    """A numbers column; narrow types widened (a copy), others used in place when contiguous."""
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"column '{name}': expected a 1-D array, got shape {values.shape}")
    values, _ = work_array(values, f"column '{name}'", copy=False)
    if missing is not None:
        missing = np.ascontiguousarray(missing, dtype=bool)
        if not missing.any():
            missing = None
    return ("numbers", name, values, missing)


def _array_column(name, values):
    """A column of a dict input: numpy arrays (masked arrays give missing rows), lists of numbers
    or of strings, object/str/bytes arrays. NaN stays a number here (numpy's view)."""
    if isinstance(values, np.ma.MaskedArray):
        return _numbers(name, values.data, np.ma.getmaskarray(values))
    arr = np.asarray(values)
    if arr.dtype.kind in "OUS":
        return ("strings", name, arr if arr.dtype.kind == "O" else arr.astype(object))
    return _numbers(name, arr)


def _series_column(name, s, pd):
    """A column of a DataFrame, with pandas' missing values: NaN, None, pandas.NA, masked rows."""
    dtype = s.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        codes = np.ascontiguousarray(s.cat.codes.to_numpy())
        categories = s.cat.categories
        if categories.dtype.kind in "OUS" or isinstance(categories.dtype, pd.StringDtype):
            return ("categories", name, list(categories), codes)
        values = np.asarray(categories)[np.where(codes < 0, 0, codes)] if len(categories) else np.zeros(len(codes))
        return _numbers(name, values, codes < 0)
    array = s.array
    arrow_backed = getattr(array, "_pa_array", None)  # pandas' Arrow-backed columns (pandas 3's strings)
    if arrow_backed is not None and hasattr(arrow_backed, "__arrow_c_stream__"):
        return ("arrow", name, arrow_backed.__arrow_c_stream__())  # read from Arrow's buffers
    if hasattr(array, "_data") and hasattr(array, "_mask"):  # nullable Int64, Float64, boolean (masked arrays)
        return _numbers(name, array._data, array._mask)
    if isinstance(dtype, pd.StringDtype) or dtype.kind in "OUS":
        return ("strings", name, s.to_numpy(dtype=object))
    values = s.to_numpy()
    if values.dtype.kind == "f":
        return _numbers(name, values, np.isnan(values))
    if values.dtype.kind not in "biu":
        raise TypeError(f"column '{name}': dtype {dtype} is not supported (numbers, strings, categories)")
    return _numbers(name, values)


def _category_ranks(spec):
    """A key column of string categories as the ranks of its categories in tandem's string order
    (UTF-8 bytes), and each rank's category code: the engine then groups small integers instead
    of every row's string (the db-benchmark's id1..id3 are categoricals; expanding 10^7 rows of
    them cost 4x the group-by). None when a category is not text: the general path names the
    problem."""
    _, name, categories, codes = spec
    encoded = _utf8_categories(categories)
    if encoded is None:
        return None
    code_of_rank = np.array(sorted(range(len(encoded)), key=encoded.__getitem__), dtype=np.int64)
    missing = codes < 0
    if np.array_equal(code_of_rank, np.arange(len(encoded))):  # categories already in string order
        ranks = codes.astype(np.int32)
    else:
        rank = np.zeros(len(encoded) + 1, dtype=np.int32)  # the last slot: code -1 (missing, masked)
        rank[code_of_rank] = np.arange(len(encoded), dtype=np.int32)
        ranks = rank[codes]
    return ("numbers", name, ranks, missing if missing.any() else None), code_of_rank


def _utf8_categories(categories):
    """The categories as the UTF-8 bytes the general path makes of them (surrogate escapes give back
    their bytes; bytes categories as they are); None when one is not text or does not encode, which
    the general path then reports."""
    if not all(isinstance(c, (str, bytes)) for c in categories):
        return None
    try:
        return [c if isinstance(c, bytes) else c.encode("utf-8", "surrogateescape") for c in categories]
    except UnicodeEncodeError:
        return None


def _rank_coded_keys(columns, by, aggs, dtypes):
    """Key columns of string categories replaced by their ranks (_category_ranks), unless an
    aggregation also reads the column; returns the columns and {name: (code of each rank, the
    column's dtype)}."""
    read = {str(column) for _, column, _, _, _ in aggs}
    keys = {str(b) for b in by}
    out, coded = [], {}
    for spec in columns:
        if spec[0] == "categories" and spec[1] in keys and spec[1] not in read:
            ranked = _category_ranks(spec)
            if ranked is not None:
                spec, code_of_rank = ranked
                coded[spec[1]] = (code_of_rank, dtypes[spec[1]])
        out.append(spec)
    return out, coded


def _categorical_keys(columns, coded):
    """The result's rank-coded key columns as categoricals of the input's dtype (its categories,
    their order, unused ones too), as pandas gives categorical keys back; rows stay in tandem's
    key order, the strings'."""
    pd = _pandas()
    out = []
    for name, values, missing in columns:
        if name in coded:
            code_of_rank, dtype = coded[name]
            if missing is None:
                codes = code_of_rank[values]
            else:  # a missing key's value is not a rank
                codes = np.where(missing, -1, code_of_rank[np.where(missing, 0, values)])
            values, missing = pd.Categorical.from_codes(codes, dtype=dtype), None
        out.append((name, values, missing))
    return out


def _needed(by, aggs):
    names = list(by)
    for op, column, _, _, _ in aggs:
        if op != "size" and column not in names:  # a label such as 0 is a column too
            names.append(column)
    return names


def _key_labels(by):
    """by as a list of column labels: one label (any hashable that pandas takes: str, int, ...) or a
    list or tuple of them."""
    return list(by) if isinstance(by, (list, tuple)) else [by]


def _check_labels(table, names):
    """Each needed label names one column, and no two of them read as the same text (the library
    names columns by text: 0 and '0' would be one name)."""
    pd = _pandas()
    if pd is not None and isinstance(table, pd.DataFrame) and not table.columns.is_unique:
        counts = table.columns.value_counts()
        for name in names:
            if counts.get(name, 0) > 1:
                raise ValueError(f"column {name!r} appears {counts[name]} times in the DataFrame; group-by needs "
                                 "one column of each name (rename or drop the others)")
    text = {}
    for name in names:
        if text.setdefault(str(name), name) != name:
            raise ValueError(f"columns {text[str(name)]!r} and {name!r} both read as '{name}'; rename one")


# Aggregates that give back a value of their column: the result keeps the column's dtype (bool,
# int8, float16 ... are widened for the library and narrowed back here).
_SAME_TYPE_OPS = ("min", "max", "first", "last", "top")


def _input_dtypes(table, by, aggs):
    """{result position: the input dtype it must have}: key columns and same-type aggregates of
    numbers whose dtype the library widens."""
    def dtype_of(name):
        if name not in table:
            return None
        d = getattr(table[name], "dtype", None)
        return d if d is not None else np.asarray(table[name]).dtype

    out, at = {}, 0
    for b in by:
        out[at] = dtype_of(b)
        at += 1
    for op, column, _, n, _ in aggs:
        width = n if op == "top" else 1
        if op in _SAME_TYPE_OPS:
            for i in range(width):
                out[at + i] = dtype_of(column)
        at += width
    return {k: v for k, v in out.items() if isinstance(v, np.dtype) and v.kind in "biuf" and v.itemsize < 4}


def _narrow_back(columns, dtypes):
    """Result columns of widened inputs back in their input's dtype (exact: the values came from it)."""
    if not dtypes:
        return columns
    out = []
    for i, (name, values, missing) in enumerate(columns):
        d = dtypes.get(i)
        if d is not None and isinstance(values, np.ndarray) and values.dtype.kind in "iuf" and values.dtype != d:
            values = values.astype(d)
        out.append((name, values, missing))
    return out


def _missing_column(name, available):
    return ValueError(f"no column '{name}' (columns: {', '.join(map(str, available)) or 'none'})")


# ---- columns out -------------------------------------------------------------------------------------
def _to_output(columns):
    """Result columns as a pandas DataFrame (missing: None in text, NaN in floats, <NA> in nullable
    integers) or, without pandas, a dict of numpy arrays (numbers with missing rows: masked arrays)."""
    pd = _pandas()
    out = {}
    for name, values, missing in columns:
        if missing is None or values.dtype.kind == "O":  # categoricals too
            out[name] = values
        elif pd is None:
            out[name] = np.ma.MaskedArray(values, mask=missing)
        elif values.dtype.kind == "f":
            values[missing] = np.nan
            out[name] = values
        elif values.dtype.kind == "b":
            out[name] = pd.arrays.BooleanArray(values, missing)
        else:
            out[name] = pd.arrays.IntegerArray(values, missing)
    return out if pd is None else pd.DataFrame(out)


# ---- public ------------------------------------------------------------------------------------------
def groupby(table, by, agg="count()", *, device="auto", threads=None, explain=False):
    """Group-by aggregation. table: a pandas DataFrame, a dict {name: array} (numpy, masked, lists,
    or GPU arrays), an Arrow table (any object with __arrow_c_stream__ or __arrow_c_array__:
    pyarrow, Polars, DuckDB, a tandem.Table; the result is then a tandem.Table), or a CSV path. by: a column name or a list of them. agg: {column: func or
    [funcs]} with funcs 'size', 'count', 'sum', 'mean', 'min', 'max', 'var', 'std', 'first',
    'last', 'nunique', 'median', ('quantile', q), ('top', n); or tandem's text form
    'sum(v1),mean(v3),count()'. Returns one row per key combination, sorted by the keys, key columns
    first then the aggregates ('sum_v1', 'mean_v3', 'count', ...): a pandas DataFrame, or a dict of
    numpy arrays without pandas; GPU columns give a dict of arrays on the GPU."""
    by = _key_labels(by)
    aggs = _aggregations(agg)
    threads = threads_arg(threads)
    if isinstance(table, (str, os.PathLike)) and hasattr(_tandem, "_groupby_csv"):
        # Streamed from the file, only the named columns read; device 'gpu': the file read into GPU
        # memory, parsed and grouped there (tandem::groupby_csv).
        _check_device(device)
        result, report = _tandem._groupby_csv(os.fspath(table), [str(b) for b in by], _library_aggregations(aggs),
                                              device, threads)
        return with_report(_to_output(result), report, explain)
    if isinstance(table, (str, os.PathLike)):
        # read_csv's columns come back as arrays (a DataFrame with pandas), then group like any table.
        return groupby(read_csv(table, threads=threads or None), by, agg, device=device, threads=threads or None,
                       explain=explain)
    if _arrow.is_arrow(table):  # Arrow in, a tandem.Table (Arrow) out
        _check_device(device)
        source = _arrow.import_table(table, _needed(by, aggs))
        columns = [("column", name, source) for name in source.names]
        result, report = _tandem._groupby_to_table(columns, [str(b) for b in by], _library_aggregations(aggs),
                                                   device, threads)
        return with_report(_arrow.Table(result), report, explain)
    pd = _pandas()
    if pd is not None and isinstance(table, pd.DataFrame):
        needed = _needed(by, aggs)
        _check_labels(table, needed)
        columns, coded = _rank_coded_keys(_host_columns(table, needed), by, aggs,
                                          {str(name): table[name].dtype for name in needed if name in table})
        return _host_groupby(columns, by, aggs, device, threads, explain, coded, _input_dtypes(table, by, aggs))
    if not isinstance(table, Mapping):
        raise TypeError(f"groupby: expected a pandas DataFrame, a dict of arrays or a CSV path, got {type(table).__name__}")
    needed = _needed(by, aggs)
    for name in needed:
        if name not in table:
            raise _missing_column(name, list(table))
    _check_labels(table, needed)
    on_gpu = {name: _device.device_array(table[name]) for name in needed}
    if any(d is not None for d in on_gpu.values()):
        if any(d is None for d in on_gpu.values()):
            raise ValueError("groupby: some columns are in GPU memory and some are not; move them to one place")
        if _device_fast_path(on_gpu, by, aggs):
            result, report = _device.groupby(on_gpu, by, [(op, column, name or _device_name(op, column, q, n))
                                                          for op, column, q, n, name in aggs])
        else:
            result, report = _device.groupby_table(on_gpu, by, (aggs, _library_aggregations(aggs)), threads)
        return with_report(result, report, explain)
    return _host_groupby([_array_column(str(name), table[name]) for name in needed], by, aggs, device, threads, explain,
                         None, _input_dtypes(table, by, aggs))


def _host_columns(table, names):
    """The named columns of a DataFrame or a dict of host arrays, as the library takes them."""
    pd = _pandas()
    if pd is not None and isinstance(table, pd.DataFrame):
        make = lambda name: _series_column(str(name), table[name], pd)  # noqa: E731
    elif isinstance(table, _arrow.Table):
        make = lambda name: ("column", str(name), table._table)  # noqa: E731
    elif isinstance(table, Mapping):
        make = lambda name: _array_column(str(name), table[name])  # noqa: E731
    else:
        raise TypeError(f"expected a pandas DataFrame or a dict of arrays, got {type(table).__name__}")
    for name in names:
        if name not in table:
            raise _missing_column(name, list(table))
    return [make(name) for name in names]


class DeviceTable:
    """A table uploaded to the GPU once, for many group-bys that then read only device memory
    (tandem::DeviceTable). table: a pandas DataFrame, a dict of host arrays or a CSV path; columns:
    the names to upload (default: all). Strings are encoded on the CPU into sorted dictionary codes
    at upload. Raises NoDeviceError without a GPU or in a CPU-only build."""

    def __init__(self, table, columns=None, *, threads=None):
        threads = threads_arg(threads)
        if isinstance(table, (str, os.PathLike)):
            table = read_csv(table, threads=threads or None)
        if _arrow.is_arrow(table):
            table = _arrow.Table(table)
        names = list(table) if columns is None else [columns] if isinstance(columns, str) else list(columns)
        self._table = _tandem._DeviceTable(_host_columns(table, names), threads)
        self.columns = [str(n) for n in names]

    @classmethod
    def _of(cls, device_table):
        t = cls.__new__(cls)
        t._table = device_table
        t.columns = list(device_table.columns)
        return t

    @property
    def rows(self):
        return self._table.rows

    @property
    def device_bytes(self):
        """Device memory the columns take."""
        return self._table.device_bytes

    @property
    def upload_seconds(self):
        return self._table.upload_seconds

    def groupby(self, by, agg="count()", *, device="auto", threads=None, explain=False, on_device=False):
        """tandem.groupby of this table on its GPU (device 'cpu' runs the CPU engine on the host
        columns); arguments and result as tandem.groupby. on_device=True leaves the result on the
        GPU as another DeviceTable (tandem::groupby_on_device): group it again, or copy it to the
        host with to_host()."""
        by = _key_labels(by)
        _check_device(device)
        aggs = _library_aggregations(_aggregations(agg))
        if on_device:
            if device == "cpu":
                raise ValueError("groupby: on_device=True needs device 'auto' or 'gpu'")
            result, report = self._table.groupby_on_device([str(b) for b in by], aggs, device, threads_arg(threads))
            return with_report(DeviceTable._of(result), report, explain)
        result, report = self._table.groupby([str(b) for b in by], aggs, device, threads_arg(threads))
        return with_report(_to_output(result), report, explain)

    def to_host(self):
        """The columns on the host as a DataFrame (a dict of numpy arrays without pandas); a group-by
        result's are copied from the GPU once, on the first call."""
        return _to_output(self._table.to_host())

    def __repr__(self):
        return f"tandem.DeviceTable({self.rows} rows, columns {self.columns}, {self.device_bytes} bytes on the GPU)"


def _device_fast_path(on_gpu, by, aggs):
    """One integer key and count/sum/min/max/mean of one value column: the hash group-by of
    tandem::mapreduce, on the caller's stream; everything else takes the table engine."""
    values = {column for op, column, _, _, _ in aggs if op != "size"}
    return (len(by) == 1 and on_gpu[by[0]].dtype.kind in "iub" and len(values) <= 1
            and all(op in _device._DEVICE_OPS for op, _, _, _, _ in aggs))


def _device_name(op, column, q, n):
    return "count" if op == "size" else f"{op}_{column}"


def _check_device(device):
    if device not in ("auto", "cpu", "gpu"):
        raise ValueError(f"groupby: device must be 'auto', 'cpu' or 'gpu', got {device!r}")


def _host_groupby(columns, by, aggs, device, threads, explain, coded=None, dtypes=None):
    _check_device(device)
    result, report = _tandem._groupby(columns, [str(b) for b in by], _library_aggregations(aggs), device, threads)
    result = _narrow_back(result, dtypes)
    if coded:
        result = _categorical_keys(result, coded)
    # Key columns under the caller's labels (0 stays 0, not '0'), as pandas gives them back.
    result = [(by[i] if i < len(by) else name, values, missing) for i, (name, values, missing) in enumerate(result)]
    return with_report(_to_output(result), report, explain)


def _csv_columns(path, schema, delimiter, threads):
    if not hasattr(_tandem, "_read_csv"):
        raise NotImplementedError(
            f"'{os.fspath(path)}': reading CSV files needs tandem::read_csv (include/tandem/table/csv.hpp), which this "
            "build of tandem does not have; read the file with pandas.read_csv and pass the DataFrame")
    if isinstance(schema, Mapping):
        schema = ",".join(f"{name}:{kind}" for name, kind in schema.items())
    return _tandem._read_csv(os.fspath(path), schema or "", delimiter or "", threads)


def read_csv(path, *, schema=None, delimiter=None, threads=None):
    """A CSV file (header row, RFC 4180 quoting) read by tandem's parallel reader. schema: types
    of some columns, {'id1': 'str', 'v1': 'i64'} or 'id1:str,v1:i64' (others are inferred);
    delimiter: ',' or '\\t' (default: from the header). Returns a pandas DataFrame (empty fields
    missing), or a dict of numpy arrays without pandas."""
    return _to_output(_csv_columns(path, schema, delimiter, threads_arg(threads)))


def generate_groupby(rows=10_000_000, k=100, nas_percent=0.0, sorted=False, seed=1):
    """The db-benchmark group-by data (id1..id6, v1..v3; see tandem::generate_groupby_table) as a
    pandas DataFrame, or a dict of numpy arrays without pandas."""
    return _to_output(_tandem._generate_groupby(int(rows), int(k), float(nas_percent), bool(sorted), int(seed)))
