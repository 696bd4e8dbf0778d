"""tandem.sort_values against pandas' DataFrame.sort_values(kind="stable") on random tables."""
import sys

import numpy as np
import pandas as pd
import pytest

import tandem

WORDS = ["", "a", "ab", "shared long prefix of many bytes: x", "shared long prefix of many bytes: y",
         "shared long prefix of many bytes", "été", "zz", None]


def random_column(rng, kind, n):
    if kind == "str":
        return pd.Series(np.array([WORDS[i] for i in rng.integers(0, len(WORDS), n)], dtype=object))
    if kind == "f64":
        specials = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, -1.5, 2.0])
        return pd.Series(specials[rng.integers(0, len(specials), n)])
    if kind == "f32":
        return pd.Series(rng.integers(-3, 3, n).astype(np.float32) / 2)
    if kind == "Int64":
        values = pd.array(rng.integers(-3, 3, n), dtype="Int64")
        values[rng.random(n) < 0.2] = pd.NA
        return pd.Series(values)
    if kind == "cat":
        return pd.Series(pd.Categorical([WORDS[i] for i in rng.integers(0, len(WORDS), n)],
                                        categories=["zz", "a", "", "ab"]))
    return pd.Series(rng.integers(-3, 3, n).astype(kind))


KINDS = ["str", "f64", "f32", "Int64", "cat", "int32", "int64", "uint32", "uint64"]


@pytest.mark.parametrize("seed", range(40))
def test_random_tables_match_pandas(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 3)) if seed % 5 == 0 else int(rng.integers(0, 2000))
    keys = int(rng.integers(1, 5))
    df = pd.DataFrame({f"k{i}": random_column(rng, KINDS[rng.integers(0, len(KINDS))], n) for i in range(keys)})
    df["payload"] = np.arange(n)
    df.index = rng.permutation(n) + 100  # labels follow their rows
    by = [f"k{i}" for i in range(keys)]
    ascending = [bool(a) for a in rng.integers(0, 2, keys)]
    na = "first" if seed % 2 else "last"
    want = df.sort_values(by, ascending=ascending, na_position=na, kind="stable")
    got = tandem.sort_values(df, by=by, ascending=ascending, na_position=na, threads=1 + seed % 3)
    pd.testing.assert_frame_equal(got, want)


@pytest.mark.parametrize("limit", [None, 0, 5, 70_000])
def test_large_frames_are_taken_column_by_column(limit):
    # From 2**16 rows the columns are gathered by tandem (_take): every dtype, the index, duplicate
    # labels and the Python objects' reference counts must come out as pandas' take leaves them.
    rng = np.random.default_rng(7)
    n = (1 << 16) + 1001
    kinds = ["str", "f64", "f32", "Int64", "cat", "int32", "uint64"]
    df = pd.DataFrame({f"c{i}": random_column(rng, kind, n) for i, kind in enumerate(kinds)})
    df["flag"] = rng.random(n) < 0.5
    df["when"] = pd.to_datetime(rng.integers(0, 10**12, n), unit="ms")
    obj = np.empty(n, dtype=object)
    obj[:] = [(i, "t") if i % 3 else None for i in range(n)]
    df["obj"] = obj
    df.columns = list(df.columns[:-1]) + ["c0"]  # a repeated label
    df.index = pd.Index(rng.permutation(n) * 3, name="label")
    df.attrs["source"] = "test"
    by = ["c1", "c2"]
    want = df.sort_values(by, ascending=[False, True], kind="stable")  # also lets pandas consolidate df
    if limit is not None:
        want = want.head(limit)
    before = [sys.getrefcount(obj[i]) for i in (1, 2, n - 1)]
    got = tandem.sort_values(df, by, ascending=[False, True], limit=limit, threads=2)
    pd.testing.assert_frame_equal(got, want)
    assert got.attrs == {"source": "test"}
    del got
    assert [sys.getrefcount(obj[i]) for i in (1, 2, n - 1)] == before


@pytest.mark.parametrize("start,step", [(0, 1), (5, 3), (100, -2)])
def test_large_frames_keep_a_range_index(start, step):
    # A RangeIndex's labels are computed from the row order, not taken: the same labels and name.
    rng = np.random.default_rng(start)
    n = (1 << 16) + 17
    df = pd.DataFrame({"k": rng.integers(0, 50, n), "v": rng.random(n)},
                      index=pd.RangeIndex(start, start + step * n, step, name="r"))
    want = df.sort_values("k", kind="stable")
    got = tandem.sort_values(df, "k", threads=2)
    pd.testing.assert_frame_equal(got, want)
    assert list(got.index[:3]) == list(want.index[:3]) and got.index.name == "r"


def test_take_checks_its_rows():
    from tandem import _tandem
    a = np.array(["x", None, "z"], dtype=object)
    assert _tandem._take(a, np.array([2, 2, 1], dtype=np.int64), 1).tolist() == ["z", "z", None]
    with pytest.raises(IndexError):
        _tandem._take(a, np.array([0, 3], dtype=np.int64), 1)
    with pytest.raises(IndexError):
        _tandem._take(np.arange(4.0), np.array([-1], dtype=np.int64), 1)
    with pytest.raises(ValueError):
        _tandem._take(np.zeros((2, 2)), np.array([0], dtype=np.int64), 1)


def test_one_key_by_name_and_limit():
    df = pd.DataFrame({"v": [3.0, np.nan, 1.0, -0.0, 0.0, 1.0], "s": list("abcdef")})
    want = df.sort_values("v", ascending=False, kind="stable")
    pd.testing.assert_frame_equal(tandem.sort_values(df, "v", ascending=False), want)
    for k in (0, 1, 3, 6, 10):
        pd.testing.assert_frame_equal(tandem.sort_values(df, "v", limit=k), df.sort_values("v", kind="stable").head(k))
    got = tandem.sort_values(df, "v", ignore_index=True)
    pd.testing.assert_frame_equal(got, df.sort_values("v", kind="stable", ignore_index=True))


def test_empty_and_one_row():
    df = pd.DataFrame({"a": np.array([], dtype=np.int64), "s": np.array([], dtype=object)})
    pd.testing.assert_frame_equal(tandem.sort_values(df, ["s", "a"]), df.sort_values(["s", "a"], kind="stable"))
    one = pd.DataFrame({"a": [5]})
    pd.testing.assert_frame_equal(tandem.sort_values(one, "a"), one)


def test_explain_returns_a_report():
    df = pd.DataFrame({"a": [2, 1]})
    result, report = tandem.sort_values(df, "a", explain=True)
    assert list(result["a"]) == [1, 2]
    assert any(s.name == "encode keys" for s in report.stages)


def test_bad_arguments():
    df = pd.DataFrame({"a": [2, 1]})
    with pytest.raises(KeyError):
        tandem.sort_values(df, "nope")
    with pytest.raises(ValueError, match="na_position"):
        tandem.sort_values(df, "a", na_position="middle")
    with pytest.raises(ValueError, match="ascending"):
        tandem.sort_values(df, ["a"], ascending=[True, False])
    with pytest.raises(TypeError):
        tandem.sort_values({"a": [1]}, "a")


@pytest.mark.parametrize("seed", range(6))
def test_every_device_gives_pandas_order(seed):
    """device="cpu" and "auto" everywhere, "gpu" where a GPU is: the same rows as pandas."""
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(0, 3000))
    df = pd.DataFrame({"s": random_column(rng, "str", n), "f": random_column(rng, "f64", n),
                       "i": random_column(rng, "Int64", n), "payload": np.arange(n)})
    want = df.sort_values(["s", "f", "i"], ascending=[True, False, True], kind="stable")
    devices = ["cpu", "auto"] + (["gpu"] if tandem.info()["gpus"] else [])
    for device in devices:
        got = tandem.sort_values(df, by=["s", "f", "i"], ascending=[True, False, True], device=device)
        pd.testing.assert_frame_equal(got, want)


def test_device_errors():
    df = pd.DataFrame({"k": [3, 1, 2]})
    with pytest.raises(ValueError, match="hybrid"):
        tandem.sort_values(df, by="k", device="hybrid")
    with pytest.raises(ValueError, match="tpu"):
        tandem.sort_values(df, by="k", device="tpu")
    if not tandem.info()["gpus"]:
        with pytest.raises(tandem.NoDeviceError):
            tandem.sort_values(df, by="k", device="gpu")
