"""tandem.Table and the Arrow PyCapsule protocol: round trips through tandem's own export and
import (no pyarrow needed), and pyarrow / pandas / Polars producers where they are installed."""
import numpy as np
import pytest

import tandem
from tandem import _tandem


class Stream:
    """Any producer of the protocol: only __arrow_c_stream__ (so tandem cannot take a shortcut)."""

    def __init__(self, source):
        self.source = source

    def __arrow_c_stream__(self, requested_schema=None):
        return self.source.__arrow_c_stream__()


class Array:
    """A producer of __arrow_c_array__ only."""

    def __init__(self, source):
        self.source = source

    def __arrow_c_array__(self, requested_schema=None):
        return self.source.__arrow_c_array__()


def sample():
    return tandem.Table({
        "i32": np.array([1, -2, 3, 4], dtype=np.int32),
        "i64": np.ma.MaskedArray(np.array([10, 20, 30, 40], dtype=np.int64), mask=[False, True, False, False]),
        "u32": np.array([1, 2, 3, 4000000000], dtype=np.uint32),
        "u64": np.array([2**64 - 1, 0, 5, 6], dtype=np.uint64),
        "f32": np.array([1.5, np.nan, -0.0, 2], dtype=np.float32),
        "f64": np.ma.MaskedArray(np.array([0.5, 1.5, 2.5, 3.5]), mask=[True, False, False, True]),
        "s": np.array(["a", None, "", "日本"], dtype=object),
    })


@pytest.mark.parametrize("wrap", [Stream, Array])
def test_round_trip_of_every_type_with_missing_rows(wrap):
    t = sample()
    back = tandem.Table(wrap(t))
    assert back.types == {"i32": "i32", "i64": "i64", "u32": "u32", "u64": "u64", "f32": "f32", "f64": "f64",
                          "s": "str"}
    d = back.to_dict()
    assert d["i32"] == [1, -2, 3, 4]
    assert d["i64"] == [10, None, 30, 40]
    assert d["u32"] == [1, 2, 3, 4000000000]
    assert d["u64"] == [2**64 - 1, 0, 5, 6]
    assert np.isnan(d["f32"][1]) and d["f32"][0] == 1.5 and np.signbit(d["f32"][2])
    assert d["f64"] == [None, 1.5, 2.5, None]
    assert d["s"] == ["a", None, "", "日本"]


def test_numbers_are_not_copied_either_way():
    v = np.arange(1000, dtype=np.float64)
    t = tandem.Table({"v": v, "k": np.arange(1000, dtype=np.int32) % 7})
    assert t._table.buffer_addresses()["v"] == v.ctypes.data  # numpy -> tandem
    back = tandem.Table(Stream(t))
    assert back._table.buffer_addresses()["v"] == v.ctypes.data  # tandem -> Arrow -> tandem
    assert back["v"].ctypes.data == v.ctypes.data
    del t
    assert back["v"][999] == 999.0  # the exported stream keeps the numpy array alive


def test_a_capsule_is_consumed_once():
    capsule = sample().__arrow_c_stream__()
    _tandem._Table.from_stream(capsule)
    with pytest.raises(tandem.UsageError, match="released"):
        _tandem._Table.from_stream(capsule)
    with pytest.raises(TypeError, match="arrow_array_stream"):
        _tandem._Table.from_stream(sample().__arrow_c_schema__())


def test_column_selection_and_unknown_columns():
    t = tandem.Table(Stream(sample()), columns=["s", "i32"])
    assert t.column_names == ["s", "i32"]
    with pytest.raises(tandem.UsageError, match="no column 'nope'"):
        tandem.Table(Stream(sample()), columns=["nope"])


def test_empty_tables():
    t = tandem.Table({"x": np.array([], dtype=np.float32), "s": np.array([], dtype=object)})
    back = tandem.Table(Stream(t))
    assert len(back) == 0 and back.types == {"x": "f32", "s": "str"}
    r = tandem.groupby(Stream(t), "s", {"x": "sum"})
    assert len(r) == 0 and r.column_names == ["s", "sum_x"]


def test_groupby_of_an_arrow_object_returns_a_table_that_exports_arrow():
    rng = np.random.default_rng(3)
    k = rng.integers(0, 5, 500).astype(np.int64)
    v = rng.random(500)
    src = tandem.Table({"k": k, "v": v, "s": np.array([f"g{i % 3}" for i in range(500)], dtype=object)})
    r = tandem.groupby(Stream(src), ["s", "k"], {"v": ["sum", "max"], "k": "count"})
    assert isinstance(r, tandem.Table)
    d = r.to_dict()
    for i, (s, kk) in enumerate(zip(d["s"], d["k"])):
        rows = (np.array([f"g{j % 3}" for j in range(500)]) == s) & (k == kk)
        assert d["sum_v"][i] == pytest.approx(v[rows].sum())
        assert d["max_v"][i] == v[rows].max()
        assert d["count_k"][i] == rows.sum()
    again = tandem.groupby(r, "s", {"count_k": "sum"})  # a result is an Arrow table too
    assert again.to_dict()["sum_count_k"] == [np.sum((np.arange(500) % 3) == g) for g in range(3)]


def test_to_pandas_does_not_write_into_lent_memory():
    pd = pytest.importorskip("pandas")
    v = np.array([1.0, 2.0, 3.0])
    t = tandem.Table({"v": np.ma.MaskedArray(v, mask=[False, True, False])})
    df = t.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert np.isnan(df["v"][1]) and v[1] == 2.0


# ---- pyarrow, pandas (Arrow-backed strings) and Polars: run where they are installed ------------------
def test_pyarrow_types_slices_chunks_dictionaries():
    pa = pytest.importorskip("pyarrow")
    t = pa.table({
        "i8": pa.array([1, None, -3], pa.int8()), "u16": pa.array([1, 2, None], pa.uint16()),
        "i32": pa.array([1, None, 3], pa.int32()), "u64": pa.array([1, 2, 2**64 - 1], pa.uint64()),
        "f16": pa.array(np.array([1.5, 2, 3], dtype=np.float16)), "f64": pa.array([1.5, None, -0.0]),
        "b": pa.array([True, None, False]), "s": pa.array(["a", None, "ccc"]),
        "ls": pa.array(["x", "yy", None], pa.large_string()),
        "d": pa.array(["p", "q", "p"]).dictionary_encode(),
    })
    back = tandem.Table(t).to_dict()
    assert back["i8"] == [1, None, -3] and back["u16"] == [1, 2, None] and back["i32"] == [1, None, 3]
    assert back["u64"] == [1, 2, 2**64 - 1] and back["f16"] == [1.5, 2.0, 3.0] and back["f64"][:2] == [1.5, None]
    assert back["b"] == [1, None, 0] and back["s"] == ["a", None, "ccc"] and back["ls"] == ["x", "yy", None]
    assert back["d"] == ["p", "q", "p"]
    sliced = tandem.Table(t.slice(1, 2)).to_dict()
    assert sliced["i32"] == [None, 3] and sliced["s"] == [None, "ccc"] and sliced["d"] == ["q", "p"]
    chunked = pa.concat_tables([t, t.slice(2)])
    assert tandem.Table(chunked).to_dict()["s"] == ["a", None, "ccc", "ccc"]
    if hasattr(pa, "string_view"):
        sv = pa.table({"v": pa.array(["short", None, "a string longer than twelve"], pa.string_view())})
        assert tandem.Table(sv).to_dict()["v"] == ["short", None, "a string longer than twelve"]


def test_pyarrow_refusals_name_the_column():
    pa = pytest.importorskip("pyarrow")
    import decimal
    for name, array in [("lst", pa.array([[1], [2, 3]])), ("st", pa.array([{"a": 1}, {"a": 2}])),
                        ("dec", pa.array([decimal.Decimal("1.5"), decimal.Decimal("2")]))]:
        with pytest.raises(tandem.UsageError, match=f"column '{name}'"):
            tandem.Table(pa.table({"ok": [1, 2], name: array}))


def test_pyarrow_zero_copy_and_results_back_to_pyarrow():
    pa = pytest.importorskip("pyarrow")
    v = pa.array(np.arange(100_000, dtype=np.int64))
    t = pa.table({"k": pa.array(np.arange(100_000) % 10), "v": v})
    tt = tandem.Table(t)
    assert tt._table.buffer_addresses()["v"] == v.buffers()[1].address  # no byte of v copied
    r = tandem.groupby(t, "k", {"v": "sum"})
    back = pa.table(r)
    expected = t.group_by("k").aggregate([("v", "sum")]).sort_by("k")
    assert back.column("sum_v").to_pylist() == expected.column("v_sum").to_pylist()
    assert pa.table(tandem.Table(t)).column("v").chunk(0).buffers()[1].address == v.buffers()[1].address


def test_pandas_arrow_backed_strings_and_categoricals():
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    df = pd.DataFrame({"s": pd.array(["b", "a", None, "b"], dtype="string[pyarrow]"),
                       "c": pd.Categorical(["x", "y", "x", "x"]), "v": [1.0, 2.0, 3.0, 4.0]})
    r = tandem.groupby(df, ["s", "c"], {"v": "sum"})
    expected = df.groupby(["s", "c"], observed=True, dropna=False)["v"].sum().reset_index()
    assert sorted(zip(r["s"].fillna("<NA>"), r["c"].astype(str), r["sum_v"])) == sorted(
        zip(expected["s"].fillna("<NA>"), expected["c"].astype(str), expected["v"]))


def test_polars_in_and_out():
    pl = pytest.importorskip("polars")
    df = pl.DataFrame({"k": ["a", "b", "a", None], "v": [1, 2, 3, 4]})
    r = tandem.groupby(df, "k", {"v": "sum"})
    back = pl.DataFrame(r)
    assert back.columns == ["k", "sum_v"]
    assert dict(zip(back["k"].to_list(), back["sum_v"].to_list())) == {"a": 4, "b": 2, None: 4}
