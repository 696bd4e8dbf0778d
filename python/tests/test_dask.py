"""tandem.dask: group-by and sort of Dask DataFrames with tandem on each partition; results equal
Dask's own (or pandas' on the computed frame, for aggregations Dask's groupby.agg lacks)."""
import numpy as np
import pytest

pd = pytest.importorskip("pandas", reason="tandem.dask needs pandas")
dd = pytest.importorskip("dask.dataframe", reason="Dask is not installed (Debian: python3-dask)")
import dask  # noqa: E402

import tandem.dask  # noqa: E402


def frame(rows=2000, seed=5, missing=True):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "id1": rng.choice([f"id{i:03d}" for i in range(20)], rows),
        "id2": rng.integers(0, 7, rows).astype(np.int64),
        "v1": rng.integers(1, 6, rows).astype(np.int64),
        "v3": rng.random(rows) * 100,
    })
    if missing:
        df.loc[rng.random(rows) < 0.05, "v3"] = np.nan
    return df


def same(result, expected, by):
    got = result.compute() if hasattr(result, "compute") else result
    got = got.sort_values(by).reset_index(drop=True)
    expected = expected.sort_values(by).reset_index(drop=True)
    assert list(got.columns) == list(expected.columns)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False, check_exact=False, rtol=1e-9)


@pytest.fixture(scope="module", autouse=True)
def threaded():
    with dask.config.set(scheduler="threads"):
        yield


@pytest.mark.parametrize("partitions", [1, 3, 8])
@pytest.mark.parametrize("split_every", [2, 8])
def test_combinable_aggregations_equal_dasks(partitions, split_every):
    df = frame()
    ddf = dd.from_pandas(df, npartitions=partitions)
    r = tandem.dask.groupby(ddf, ["id1", "id2"], {"v1": ["sum", "count", "min", "max"], "v3": ["mean", "sum"]},
                            split_every=split_every)
    e = ddf.groupby(["id1", "id2"]).agg({"v1": ["sum", "count", "min", "max"], "v3": ["mean", "sum"]}).compute()
    e.columns = [f"{f}_{c}" for c, f in e.columns]
    same(r, e.reset_index(), ["id1", "id2"])
    sizes = tandem.dask.groupby(ddf, "id1", {"v1": "size"}).compute()
    expected = ddf.groupby("id1").size().compute().rename("count").reset_index()
    same(sizes, expected, ["id1"])


@pytest.mark.parametrize("partitions", [1, 4, 7])
def test_shuffled_aggregations_equal_pandas_on_the_same_data(partitions):
    df = frame()
    ddf = dd.from_pandas(df, npartitions=partitions)
    r = tandem.dask.groupby(ddf, "id1", {"v1": ["median", "nunique", "var", "std", "first", "last"],
                                         "v3": [("quantile", 0.25)]}, npartitions=3)
    assert r.npartitions == 3
    g = df.groupby("id1")
    e = pd.DataFrame({"median_v1": g["v1"].median(), "nunique_v1": g["v1"].nunique(), "var_v1": g["v1"].var(),
                      "std_v1": g["v1"].std(), "first_v1": g["v1"].first(), "last_v1": g["v1"].last(),
                      "quantile_v3": g["v3"].quantile(0.25)}).reset_index()
    got = r.compute()
    got = got.rename(columns={"q0.25_v3": "quantile_v3"})
    same(got, e, ["id1"])
    # the shuffle must not reorder rows: first/last follow the input order across partitions
    dask_first = ddf.groupby("id1")["v1"].first().compute().sort_index()
    assert got.sort_values("id1")["first_v1"].tolist() == dask_first.tolist()


def test_top_and_missing_keys():
    df = frame(500)
    df.loc[::17, "id2"] = -1
    df["k"] = df["id1"].where(df["id2"] != -1, None)
    ddf = dd.from_pandas(df, npartitions=4)
    r = tandem.dask.groupby(ddf, "k", {"v3": "sum", "v1": "count"}).compute()
    expected = tandem.groupby(df, "k", {"v3": "sum", "v1": "count"})
    same(r, expected, ["k"])
    top = tandem.dask.groupby(ddf, "k", {"v1": ("top", 2)}).compute()
    same(top, tandem.groupby(df, "k", {"v1": ("top", 2)}), ["k"])


def test_an_empty_frame():
    ddf = dd.from_pandas(frame().iloc[:0], npartitions=1)
    assert len(tandem.dask.groupby(ddf, "id1", {"v1": "sum"}).compute()) == 0
    assert len(tandem.dask.groupby(ddf, "id1", {"v1": "median"}).compute()) == 0


@pytest.mark.parametrize("partitions", [1, 5])
@pytest.mark.parametrize("column", ["v3", "id2", "id1"])
@pytest.mark.parametrize("ascending", [True, False])
def test_sort_values_equals_dasks(partitions, column, ascending):
    df = frame(3000)
    ddf = dd.from_pandas(df, npartitions=partitions)
    r = tandem.dask.sort_values(ddf, column, ascending=ascending).compute()
    e = ddf.sort_values(column, ascending=ascending).compute()
    assert r[column].fillna(-1).tolist() == e[column].fillna(-1).tolist() if column != "id1" else \
        r[column].tolist() == e[column].tolist()
    pd.testing.assert_frame_equal(r.sort_index(), df.sort_index())  # the same rows, none lost or doubled


def test_on_a_cluster_of_worker_processes():
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c, \
            distributed.Client(c):
        df = frame()
        ddf = dd.from_pandas(df, npartitions=4)
        r = tandem.dask.groupby(ddf, "id1", {"v1": "sum", "v3": "median"})
        g = df.groupby("id1")
        same(r, pd.DataFrame({"sum_v1": g["v1"].sum(), "median_v3": g["v3"].median()}).reset_index(), ["id1"])
        s = tandem.dask.sort_values(ddf, "v3").compute()
        assert s["v3"].fillna(np.inf).is_monotonic_increasing
