"""Tables into tandem and back, and tandem.groupby against pandas."""
import numpy as np
import pandas as pd
import pytest

import tandem
from tandem import _tables, _tandem


def roundtrip(*columns):
    return {name: (values, missing) for name, values, missing in _tandem._table_roundtrip(list(columns))}


# ---- conversions -------------------------------------------------------------------------------------
def test_strings_with_missing_values():
    items = np.array(["a", None, "", "été", np.nan, pd.NA, b"raw\xff", "x\udcff"], dtype=object)
    values, missing = roundtrip(("strings", "s", items))["s"]
    assert list(missing) == [False, True, False, False, True, True, False, False]
    # bytes come back as str, with undecodable bytes as surrogate escapes (lossless both ways)
    assert list(values) == ["a", None, "", "été", None, None, "raw\udcff", "x\udcff"]


def test_strings_from_a_list():
    values, missing = roundtrip(("strings", "s", ["b", "a"]))["s"]
    assert list(values) == ["b", "a"] and missing is None


def test_strings_reject_numbers():
    with pytest.raises(TypeError, match="column 's' row 1: int is not a string"):
        _tandem._table_roundtrip([("strings", "s", ["a", 3])])


def test_category_codes_become_strings():
    cat = pd.Categorical(["x", "y", None, "x"])
    values, missing = roundtrip(("categories", "c", list(cat.categories), np.asarray(cat.codes)))["c"]
    assert list(values) == ["x", "y", None, "x"]
    assert list(missing) == [False, False, True, False]


def test_numbers_are_lent_not_copied():
    a = np.arange(10, dtype=np.int64)
    values, missing = roundtrip(("numbers", "n", a, None))["n"]
    assert missing is None
    assert np.shares_memory(values, a)
    assert not values.flags.writeable


def test_numbers_with_a_missing_mask():
    values, missing = roundtrip(("numbers", "n", np.arange(4, dtype=np.float32), np.array([0, 1, 0, 1], bool)))["n"]
    assert list(missing) == [False, True, False, True]


def test_columns_of_different_lengths():
    with pytest.raises(ValueError, match="column 'b' has 2 rows but column 'a' has 3"):
        _tandem._table_roundtrip([("numbers", "a", np.zeros(3), None), ("numbers", "b", np.zeros(2), None)])


def test_numbers_need_contiguous_native_arrays():
    with pytest.raises(ValueError, match="not contiguous"):
        _tandem._table_roundtrip([("numbers", "a", np.zeros(6)[::2], None)])
    with pytest.raises(TypeError, match="float16"):
        _tandem._table_roundtrip([("numbers", "a", np.zeros(6, np.float16), None)])


def test_dataframe_columns():
    df = pd.DataFrame({
        "f": [1.5, np.nan, 2.5],
        "i": pd.array([1, None, 3], dtype="Int64"),
        "s": ["a", None, "c"],
        "c": pd.Categorical(["u", "v", None]),
        "b": [True, False, True],
        "t": pd.array(["p", None, "r"], dtype="string"),
        "strided": np.arange(6.0)[::2],
    })
    pandas_module = pd
    columns = {c[1]: c for c in (_tables._series_column(n, df[n], pandas_module) for n in df.columns)}
    out = roundtrip(*columns.values())
    assert list(out["f"][1]) == [False, True, False]  # NaN is missing in a DataFrame
    assert list(out["i"][1]) == [False, True, False]
    assert list(out["s"][0]) == ["a", None, "c"]
    assert list(out["c"][0]) == ["u", "v", None]
    assert out["b"][0].dtype == np.int32 and list(out["b"][0]) == [1, 0, 1]
    assert list(out["t"][0]) == ["p", None, "r"]
    assert list(out["strided"][0]) == [0.0, 2.0, 4.0]


# ---- group-by against pandas ---------------------------------------------------------------------------
def messy_frame(n=3000, seed=7):
    rng = np.random.default_rng(seed)
    words = np.array(["alpha", "beta", "gamma", "δέλτα", "", "e,psilon", "ze\"ta"], dtype=object)
    s = words[rng.integers(0, len(words), n)]
    s[rng.random(n) < 0.05] = None
    k2 = rng.integers(-3, 4, n)
    v = rng.standard_normal(n) * 100
    v[rng.random(n) < 0.1] = np.nan
    iv = pd.array(rng.integers(-1000, 1000, n), dtype="Int64")
    iv[rng.random(n) < 0.1] = pd.NA
    return pd.DataFrame({"s": s, "k2": k2, "v": v, "iv": iv})


def assert_frames_match(got, expected):
    got = got.reset_index(drop=True)
    expected = expected.reset_index(drop=True)
    assert list(got.columns) == list(expected.columns)
    for name in got.columns:
        g, e = got[name], expected[name]
        if g.dtype.kind == "f" or e.dtype.kind == "f":
            np.testing.assert_allclose(g.astype(float).to_numpy(), e.astype(float).to_numpy(), rtol=1e-9, atol=1e-9,
                                       err_msg=name, equal_nan=True)
        else:
            assert list(g.astype(object).where(g.notna(), None)) == list(e.astype(object).where(e.notna(), None)), name


def test_groupby_strings_and_missing_values_equal_pandas():
    df = messy_frame()
    got = tandem.groupby(df, by="s", agg={"v": ["sum", "mean", "min", "max", "count", "var", "std", "median"],
                                          "iv": ["sum", "min", "max", "nunique", "first", "last"], "k2": "size"})
    g = df.groupby("s", dropna=False, sort=True)
    expected = pd.DataFrame({
        "s": g.size().index,
        "sum_v": g["v"].sum(min_count=1).to_numpy(),  # a group of only missing values: missing, not 0
        "mean_v": g["v"].mean().to_numpy(),
        "min_v": g["v"].min().to_numpy(),
        "max_v": g["v"].max().to_numpy(),
        "count_v": g["v"].count().to_numpy(),
        "var_v": g["v"].var().to_numpy(),
        "std_v": g["v"].std().to_numpy(),
        "median_v": g["v"].median().to_numpy(),
        "sum_iv": g["iv"].sum(min_count=1).to_numpy(),
        "min_iv": g["iv"].min().to_numpy(),
        "max_iv": g["iv"].max().to_numpy(),
        "nunique_iv": g["iv"].nunique().to_numpy(),
        "first_iv": g["iv"].first().to_numpy(),
        "last_iv": g["iv"].last().to_numpy(),
        "count": g.size().to_numpy(),
    })
    # pandas sorts str keys by code point and tandem by UTF-8 bytes: the same order; None last in both
    expected["s"] = expected["s"].astype(object).where(expected["s"].notna(), None)
    assert_frames_match(got, expected)


def test_groupby_two_keys_equal_pandas():
    df = messy_frame(seed=11)
    got = tandem.groupby(df, by=["s", "k2"], agg="sum(v),count()")
    g = df.groupby(["s", "k2"], dropna=False, sort=True)
    expected = pd.DataFrame({"sum_v": g["v"].sum(min_count=1), "count": g.size()}).reset_index()
    expected["s"] = expected["s"].astype(object).where(expected["s"].notna(), None)
    assert_frames_match(got, expected)


def test_groupby_category_keys_and_quantiles():
    df = messy_frame(seed=3)
    df["c"] = df["s"].astype("category")
    got = tandem.groupby(df, by="c", agg={"v": [("quantile", 0.9), ("top", 2)]})
    assert list(got.columns) == ["c", "q0.9_v", "top1_v", "top2_v"]
    g = df.groupby("s", dropna=False, sort=True)["v"]
    np.testing.assert_allclose(got["q0.9_v"].to_numpy(), g.quantile(0.9).to_numpy(), equal_nan=True)
    np.testing.assert_allclose(got["top1_v"].to_numpy(), g.max().to_numpy(), equal_nan=True)


@pytest.mark.parametrize("reorder", [False, True])
def test_groupby_category_keys_equal_the_same_keys_as_strings(reorder):
    # Categorical keys are grouped by their categories' ranks: the result must be the one the strings
    # give, whatever the categories' own order, with missing codes, unused categories, a second key.
    df = messy_frame(seed=5)
    cat = df["s"].astype("category")
    if reorder:
        cat = cat.cat.set_categories(list(cat.cat.categories)[::-1] + ["unused"])
    df["c"] = cat
    for by in (["c"], ["c", "k2"], ["k2", "c"]):
        got = tandem.groupby(df, by=by, agg="sum(v),count(),nunique(iv)")
        want = tandem.groupby(df.assign(c=df["s"]), by=by, agg="sum(v),count(),nunique(iv)")
        assert_frames_match(got, want)
        assert got["c"].dtype == df["c"].dtype  # a categorical key comes back as one, as in pandas
        assert "unused" not in set(got["c"].dropna())
    both = tandem.groupby(df, by="c", agg={"c": ["count", "first"]})  # the key read as a value: strings
    assert list(both.columns) == ["c", "count_c", "first_c"]
    assert list(both["first_c"].dropna()) == list(both["c"].dropna())


def test_groupby_category_keys_of_bytes_and_text_that_cannot_be_utf8():
    df = pd.DataFrame({"c": pd.Categorical([b"b", b"a", b"b"]), "v": [1, 2, 3]})
    got = tandem.groupby(df, by="c", agg={"v": "sum"})
    assert list(got["c"]) == [b"a", b"b"] and list(got["sum_v"]) == [2, 4]
    try:  # a pandas whose strings are Arrow's cannot hold such a category at all
        cats = pd.Index(["ok", "\ud800"], dtype=object)
        bad = pd.DataFrame({"c": pd.Categorical.from_codes([0, 1], categories=cats), "v": [1, 2]})
    except UnicodeEncodeError:
        pytest.skip("this pandas cannot make a category that is not UTF-8")
    with pytest.raises(ValueError, match="column 'c'.*UTF-8"):
        tandem.groupby(bad, by="c")


def test_groupby_dict_of_numpy_arrays():
    keys = np.array([3, 1, 3, 2, 1], dtype=np.uint32)
    vals = np.array([1.0, np.nan, 2.0, 4.0, 8.0])  # NaN is a number in numpy arrays
    got = tandem.groupby({"k": keys, "v": vals}, by="k", agg={"v": ["sum", "count"]})
    assert list(got["k"]) == [1, 2, 3]
    assert np.isnan(got["sum_v"][0]) and list(got["sum_v"][1:]) == [4.0, 3.0]
    assert list(got["count_v"]) == [2, 1, 2]


def test_groupby_masked_array_and_list_of_strings():
    vals = np.ma.MaskedArray([1, 2, 3, 4], mask=[False, True, False, False])
    got = tandem.groupby({"k": ["b", "a", "b", "a"], "v": vals}, by="k", agg={"v": "sum"})
    assert list(got["k"]) == ["a", "b"] and list(got["sum_v"]) == [4, 4]


def test_groupby_without_pandas(monkeypatch):
    monkeypatch.setattr(_tables, "_pandas_module", None)
    vals = np.ma.MaskedArray([1, 2, 3], mask=[False, True, True])
    got = tandem.groupby({"k": np.array([1, 2, 1]), "v": vals}, by="k", agg={"v": ["sum", "count"]})
    assert isinstance(got, dict) and list(got) == ["k", "sum_v", "count_v"]
    assert isinstance(got["sum_v"], np.ma.MaskedArray)
    assert got["sum_v"][0] == 1 and got["sum_v"].mask[1]  # group 2 has no present value: missing
    assert list(got["count_v"]) == [1, 0]


def test_groupby_explain():
    got, report = tandem.groupby({"k": np.arange(10) % 3}, by="k", explain=True)
    assert list(got["count"]) == [4, 3, 3]
    assert report.operation == "groupby" and report.stages


def test_groupby_errors():
    df = pd.DataFrame({"k": [1, 2], "s": ["a", "b"], "t": pd.to_datetime(["2020", "2021"])})
    with pytest.raises(ValueError, match="no column 'x'"):
        tandem.groupby(df, by="x")
    with pytest.raises(ValueError, match="'mode' is not one of"):
        tandem.groupby(df, by="k", agg={"s": "mode"})
    with pytest.raises(tandem.UsageError):
        tandem.groupby(df, by="k", agg={"s": "sum"})  # the library: a sum of strings
    with pytest.raises(TypeError, match="column 't'"):
        tandem.groupby(df, by="t")
    with pytest.raises(ValueError, match="rows"):
        tandem.groupby({"k": np.zeros(3), "v": np.zeros(2)}, by="k", agg={"v": "sum"})
    with pytest.raises(TypeError, match="DataFrame"):
        tandem.groupby(42, by="k")
    with pytest.raises(tandem.UsageError, match="does not parse|agg|parse"):
        tandem.groupby(df, by="k", agg="sum(")


def test_groupby_integer_sum_overflow_is_an_input_error():
    big = np.array([2**62, 2**62, 2**62], dtype=np.int64)
    with pytest.raises(tandem.InputError):
        tandem.groupby({"k": np.zeros(3, np.int32), "v": big}, by="k", agg={"v": "sum"}, device="cpu")


def test_groupby_csv_path(tmp_path):
    df = messy_frame(200)
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    if not hasattr(_tandem, "_read_csv"):
        with pytest.raises(NotImplementedError, match="read_csv"):
            tandem.groupby(path, by="s", agg={"v": "sum"})
        return
    got = tandem.groupby(str(path), by="k2", agg={"v": ["sum", "count"]})
    back = pd.read_csv(path)
    g = back.groupby("k2", sort=True)["v"]
    np.testing.assert_allclose(got["sum_v"].to_numpy(), g.sum(min_count=1).to_numpy(), equal_nan=True)
    assert list(got["count_v"]) == list(g.count())


def test_groupby_csv_path_streams_only_the_named_columns(tmp_path):
    if not hasattr(_tandem, "_groupby_csv"):
        pytest.skip("no streaming CSV scan in this build")
    path = tmp_path / "g.csv"
    path.write_text("k,zip,v,w\na,08123,1,x\nb,00501,2,\"y,z\"\na,10001,3,37\"N\n")
    got, report = tandem.groupby(str(path), by="k", agg={"v": "sum"}, explain=True)
    assert list(got["k"]) == ["a", "b"] and list(got["sum_v"]) == [4, 2]
    assert "2 of 4 columns read" in report.explain()
    zips = tandem.groupby(path, by="zip", agg="count()")  # leading zeros: a string key
    assert list(zips["zip"]) == ["00501", "08123", "10001"]


def test_groupby_csv_path_on_the_gpu(tmp_path):
    """device='gpu' reads the file into GPU memory and groups it there (the same answer as the
    CPU stream); without a GPU it is a NoDeviceError."""
    if not hasattr(_tandem, "_groupby_csv"):
        pytest.skip("no streaming CSV scan in this build")
    path = tmp_path / "g.csv"
    df = tandem.generate_groupby(rows=5000, k=10, seed=4)
    df.to_csv(path, index=False)
    if not _gpu_present():
        with pytest.raises(tandem.NoDeviceError):
            tandem.groupby(str(path), by="id3", agg="sum(v1),mean(v3)", device="gpu")
        return
    got, report = tandem.groupby(str(path), by=["id1", "id3"], agg="sum(v1),mean(v3),count()", device="gpu",
                                 explain=True)
    assert "parse CSV" in report.explain()
    want = tandem.groupby(str(path), by=["id1", "id3"], agg="sum(v1),mean(v3),count()", device="cpu")
    assert list(got["id3"]) == list(want["id3"]) and list(got["sum_v1"]) == list(want["sum_v1"])
    np.testing.assert_allclose(got["mean_v3"].to_numpy(), want["mean_v3"].to_numpy(), rtol=1e-12)


def test_read_csv_and_groupby_csv_read_one_dialect(tmp_path):
    if not hasattr(_tandem, "_read_csv"):
        pytest.skip("no CSV reader in this build")
    path = tmp_path / "d.csv"
    path.write_text('place,zip,x,e\n37\u00b036\'37.8"N,08123,-0.5,\nab"c,00501,0,\n"q""r",10001,0.5,\n',
                    encoding="utf-8")
    df = tandem.read_csv(str(path), threads=2)
    # A quote inside an unquoted field is a literal byte, as pandas reads it.
    assert list(df["place"]) == list(pd.read_csv(path, dtype=str)["place"])
    assert list(df["zip"]) == ["08123", "00501", "10001"]  # leading zeros: text
    assert list(df["x"]) == [-0.5, 0.0, 0.5]
    assert df["e"].isna().all()  # no value at all: an all-missing number column
    streamed = tandem.groupby(str(path), by="zip", agg="sum(x),sum(e)")
    from_table = tandem.groupby(df, by="zip", agg="sum(x),sum(e)")
    assert list(streamed["zip"]) == list(from_table["zip"]) == ["00501", "08123", "10001"]
    assert list(streamed["sum_x"]) == list(from_table["sum_x"])
    assert streamed["sum_e"].isna().all() and from_table["sum_e"].isna().all()


def test_generate_groupby():
    df = tandem.generate_groupby(rows=1000, k=10, seed=3)
    assert list(df.columns) == ["id1", "id2", "id3", "id4", "id5", "id6", "v1", "v2", "v3"]
    assert len(df) == 1000
    assert df["id1"].str.match(r"^id\d{3}$").all()
    assert df["v1"].between(1, 5).all() and df["v3"].between(0, 100).all()
    again = tandem.generate_groupby(rows=1000, k=10, seed=3)
    pd.testing.assert_frame_equal(df, again)


def _gpu_present():
    info = tandem.info()
    return bool(info["gpus"]) and info["python_module"]["cuda_built"]


@pytest.mark.skipif(_gpu_present(), reason="a GPU is present: the next test uploads")
def test_device_table_without_a_gpu_is_a_no_device_error():
    with pytest.raises(tandem.NoDeviceError):
        tandem.DeviceTable({"k": np.arange(10, dtype=np.int32)})


@pytest.mark.skipif(not _gpu_present(), reason="needs a GPU")
def test_device_table_groupbys_equal_the_cpu_engine():
    df = tandem.generate_groupby(rows=200_000, k=10, nas_percent=5)
    table = tandem.DeviceTable(df, ["id1", "id3", "id4", "v1", "v3"])
    assert table.rows == len(df) and table.device_bytes > 0
    for by, agg in [("id1", "sum(v1)"), (["id1", "id4"], "mean(v3),count()"), ("id3", "median(v3),top(v3,2)"),
                    ("id4", "std(v3),nunique(v1),first(id1)")]:
        got = table.groupby(by, agg)
        want = tandem.groupby(df, by, agg, device="cpu")
        pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=1e-9)
    with pytest.raises(tandem.UsageError):
        table.groupby("id2", "count()")


@pytest.mark.skipif(not _gpu_present(), reason="needs a GPU")
def test_device_table_results_stay_on_the_gpu_and_group_again():
    df = tandem.generate_groupby(rows=200_000, k=10, nas_percent=5)
    table = tandem.DeviceTable(df, ["id1", "id2", "id4", "v1", "v3"])
    fine = table.groupby(["id1", "id2", "id4"], "sum(v1),max(v3),min(id2)", on_device=True)
    assert isinstance(fine, tandem.DeviceTable)
    assert fine.columns == ["id1", "id2", "id4", "sum_v1", "max_v3", "min_id2"]
    want = tandem.groupby(df, ["id1", "id2", "id4"], "sum(v1),max(v3),min(id2)", device="cpu")
    pd.testing.assert_frame_equal(fine.to_host(), want, check_exact=False, rtol=1e-9)
    del table  # the result keeps what it needs
    coarse = fine.groupby("id1", "sum(sum_v1),max(max_v3)", on_device=True).to_host()
    direct = tandem.groupby(df, "id1", "sum(v1),max(v3)", device="cpu")
    assert list(coarse["id1"]) == list(direct["id1"])
    assert np.allclose(coarse["max_max_v3"], direct["max_v3"])
    with pytest.raises(ValueError):
        fine.groupby("id1", "count()", device="cpu", on_device=True)
