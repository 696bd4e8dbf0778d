"""tandem.Table and the Arrow PyCapsule protocol: tables from any object that exports
__arrow_c_stream__ or __arrow_c_array__ (pyarrow, Polars, DuckDB, pandas >= 2.2, nanoarrow, ...)
read without copying numbers, and results that export the same protocol."""
from collections.abc import Mapping

import numpy as np

from . import _tandem


def is_arrow(obj):
    """True for objects tandem reads through the Arrow protocol: a tandem.Table, or anything that
    exports __arrow_c_stream__ or __arrow_c_array__ except a pandas DataFrame (read column by
    column, so that categoricals keep their codes and numpy columns stay numpy)."""
    if isinstance(obj, Table):
        return True
    if type(obj).__module__.startswith("pandas") or isinstance(obj, Mapping):
        return False
    return hasattr(obj, "__arrow_c_stream__") or hasattr(obj, "__arrow_c_array__")


def import_table(obj, columns=None, codes=False):
    """The _Table of an Arrow object's columns (names, or None for all); dictionary columns decoded
    (codes=False) or as their integer codes."""
    if isinstance(obj, Table):
        return obj._table
    names = None if columns is None else [str(c) for c in columns]
    if hasattr(obj, "__arrow_c_stream__"):
        return _tandem._Table.from_stream(obj.__arrow_c_stream__(), names, codes)
    if hasattr(obj, "__arrow_c_array__"):
        schema, array = obj.__arrow_c_array__()
        return _tandem._Table.from_array(schema, array, names, codes)
    raise TypeError(f"expected an object with __arrow_c_stream__ or __arrow_c_array__, got {type(obj).__name__}")


class Table:
    """A table held by tandem (tandem::Table): from an Arrow object (pyarrow Table or
    RecordBatchReader, Polars DataFrame, DuckDB relation, ...), a pandas DataFrame or a dict of
    arrays; numbers are lent, not copied. It exports the Arrow PyCapsule protocol, so
    pyarrow.table(t), polars.DataFrame(t) and DuckDB read it in place; to_pandas() and to_dict()
    convert. tandem.groupby of an Arrow object returns one."""

    def __init__(self, data, columns=None):
        if isinstance(data, _tandem._Table):
            self._table = data
        elif isinstance(data, Table):
            self._table = data._table if columns is None else _tandem._Table.from_columns(
                [("column", str(c), data._table) for c in columns])
        elif is_arrow(data):
            self._table = import_table(data, columns)
        else:
            from ._tables import _host_columns
            names = list(data) if columns is None else list(columns)
            self._table = _tandem._Table.from_columns(_host_columns(data, names))

    @property
    def num_rows(self):
        return self._table.rows

    @property
    def column_names(self):
        return list(self._table.names)

    @property
    def types(self):
        """tandem's type of each column: {'id1': 'str', 'v1': 'i64', ...}."""
        return dict(zip(self._table.names, self._table.types))

    def __len__(self):
        return self._table.rows

    def __iter__(self):
        return iter(self._table.names)

    def __contains__(self, name):
        return name in self._table.names

    def _columns(self):
        return self._table.columns()

    def __getitem__(self, name):
        """A column as a numpy array: numbers are read-only views of tandem's (or the producer's)
        memory, a masked array where rows are missing; strings an object array (None missing)."""
        for n, values, missing in self._columns():
            if n == name:
                if values.dtype.kind != "O":
                    values.flags.writeable = False
                    if missing is not None:
                        return np.ma.MaskedArray(values, mask=missing)
                return values
        raise KeyError(f"no column '{name}' (columns: {', '.join(self._table.names)})")

    def to_pandas(self):
        """A pandas DataFrame (missing: None in text, NaN in floats, <NA> in nullable integers); a
        dict of numpy arrays without pandas. Numbers without missing rows stay views (read-only)."""
        from ._tables import _to_output
        columns = []
        for name, values, missing in self._columns():
            if values.dtype.kind != "O":
                values = values.copy() if missing is not None else values  # NaN goes in: never into lent memory
                values.flags.writeable = missing is not None
            columns.append((name, values, missing))
        return _to_output(columns)

    def to_dict(self):
        """{name: list of Python values (None missing)}."""
        out = {}
        for name, values, missing in self._columns():
            items = values.tolist()
            if missing is not None:
                items = [None if m else v for v, m in zip(items, missing.tolist())]
            out[name] = items
        return out

    def groupby(self, by, agg="count()", **options):
        """tandem.groupby of this table (a tandem.Table back)."""
        from ._tables import groupby
        return groupby(self, by, agg, **options)

    def __arrow_c_schema__(self):
        return self._table.schema_capsule()

    def __arrow_c_array__(self, requested_schema=None):
        # A requested schema is a hint the protocol lets a producer ignore; tandem's types are fixed.
        return self._table.array_capsules()

    def __arrow_c_stream__(self, requested_schema=None):
        return self._table.stream_capsule()

    def __repr__(self):
        columns = ", ".join(f"{n}: {t}" for n, t in self.types.items())
        return f"tandem.Table({self.num_rows} rows; {columns})"
