"""GPU arrays through CuPy: sorted and grouped on the device, on CuPy's current stream. Skipped
without CuPy or without a GPU."""
import numpy as np
import pytest

import tandem
from tandem import _tandem

cupy = pytest.importorskip("cupy")


def _gpus():
    try:
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no driver, no device
        return 0


pytestmark = pytest.mark.skipif(_gpus() == 0, reason="no GPU")
needs_cuda_build = pytest.mark.skipif(not _tandem.cuda_built, reason="this build of tandem has no CUDA")

KEY_TYPES = [np.int32, np.int64, np.uint32, np.uint64, np.float32, np.float64]
WIDENED_TYPES = [np.bool_, np.int8, np.int16, np.uint8, np.uint16, np.float16]


def host_random(dtype, n, seed=1):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dtype.kind == "f":
        a = (rng.standard_normal(n) * 1000).astype(dtype)
        a[::97] = np.nan
        a[1::101] = -np.nan
        a[2::89] = -0.0
        return a
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def test_without_cuda_build_gpu_arrays_are_refused():
    if _tandem.cuda_built:
        pytest.skip("this build has CUDA")
    with pytest.raises(tandem.NoDeviceError):
        tandem.sort(cupy.arange(4))


@needs_cuda_build
@pytest.mark.parametrize("dtype", KEY_TYPES + WIDENED_TYPES)
@pytest.mark.parametrize("n", [0, 1, 1000, 1 << 20])
def test_sort_matches_numpy(dtype, n):
    h = host_random(dtype, n)
    d = cupy.asarray(h)
    out = tandem.sort(d)
    assert isinstance(out, cupy.ndarray) and out.dtype == d.dtype and out.device == d.device
    np.testing.assert_array_equal(cupy.asnumpy(out), np.sort(h))
    np.testing.assert_array_equal(cupy.asnumpy(d), h)  # input untouched


@needs_cuda_build
@pytest.mark.parametrize("dtype", [np.uint32, np.float32, np.int64])
def test_sort_descending_and_in_place(dtype):
    h = host_random(dtype, 100_000)
    d = cupy.asarray(h)
    nans = int(np.isnan(h).sum()) if h.dtype.kind == "f" else 0
    out = cupy.asnumpy(tandem.sort(d, descending=True))
    np.testing.assert_array_equal(out[: h.size - nans], np.sort(h)[: h.size - nans][::-1])
    assert np.isnan(out[h.size - nans:]).all()
    ptr = d.data.ptr
    assert tandem.sort(d, inplace=True) is None
    assert d.data.ptr == ptr
    np.testing.assert_array_equal(cupy.asnumpy(d), np.sort(h))


@needs_cuda_build
def test_sort_strided_view_in_place():
    h = host_random(np.float64, 30_000)
    d = cupy.asarray(h)
    view = d[::3]
    tandem.sort(view, inplace=True)
    np.testing.assert_array_equal(cupy.asnumpy(d[::3]), np.sort(h[::3]))
    np.testing.assert_array_equal(cupy.asnumpy(d[1::3]), h[1::3])


@needs_cuda_build
@pytest.mark.parametrize("dtype", KEY_TYPES)
def test_argsort_matches_numpy_stable(dtype):
    h = host_random(dtype, 200_000)
    h[::5] = h[0]
    order = tandem.argsort(cupy.asarray(h))
    assert isinstance(order, cupy.ndarray) and order.dtype == np.int64
    np.testing.assert_array_equal(cupy.asnumpy(order), np.argsort(h, kind="stable"))


@needs_cuda_build
@pytest.mark.parametrize("value_type", [np.uint32, np.float64, np.int8])
def test_sort_by_key(value_type):
    keys = host_random(np.int32, 50_000)
    keys[::3] = keys[0]
    values = np.arange(keys.size).astype(value_type)
    k, v = tandem.sort_by_key(cupy.asarray(keys), cupy.asarray(values))
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(cupy.asnumpy(k), keys[order])
    np.testing.assert_array_equal(cupy.asnumpy(v), values[order])


@needs_cuda_build
def test_runs_on_the_current_stream():
    h = host_random(np.uint32, 1 << 20)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        d = cupy.asarray(h)
        out, report = tandem.sort(d, explain=True)
        assert report.details["stream"] == stream.ptr
    stream.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(out), np.sort(h))


@needs_cuda_build
@pytest.mark.parametrize("dtype", [np.uint32, np.int32, np.float32])
def test_large_32_bit_keys_take_the_msd_sort_and_say_so(dtype):
    # Random bits spread over every 16-bit prefix (normal floats crowd into a few exponents, whose
    # prefixes hold more keys than a block sorts: they take CUB's sort).
    bits = np.random.default_rng(5).integers(0, 1 << 32, (1 << 26) + 3, dtype=np.uint64).astype(np.uint32)
    h = bits.view(dtype)
    d = cupy.asarray(h)
    out, report = tandem.sort(d, explain=True)
    assert report.details["sort"] == "msd-radix", report.notes
    np.testing.assert_array_equal(cupy.asnumpy(out), np.sort(h))  # NaNs last, as numpy puts them
    few = cupy.asarray(np.arange((1 << 26) + 3, dtype=np.uint32) % 16)
    out, report = tandem.sort(few, explain=True)
    assert report.details["sort"] == "cub-radix", report.notes  # 16 distinct keys share one prefix
    assert bool(cupy.all(out[1:] >= out[:-1]))
    small = cupy.asarray(h[:1000])
    assert tandem.sort(small, explain=True)[1].details["sort"] == "cub-radix"


class DlpackOnly:
    """An array that offers nothing but DLPack."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


@needs_cuda_build
def test_dlpack_producers():
    h = host_random(np.float32, 5000)
    out = tandem.sort(DlpackOnly(cupy.asarray(h)))
    np.testing.assert_array_equal(cupy.asnumpy(out), np.sort(h))


@needs_cuda_build
def test_device_errors():
    d = cupy.arange(10)
    with pytest.raises(ValueError, match="GPU memory"):
        tandem.sort(d, device="cpu")
    with pytest.raises(ValueError, match="values are not"):
        tandem.sort_by_key(d, np.arange(10))
    with pytest.raises(ValueError, match="10 keys but 9 values"):
        tandem.sort_by_key(d, cupy.arange(9))
    with pytest.raises(TypeError, match="not supported"):
        tandem.sort(cupy.zeros(3, dtype=cupy.complex64))
    with pytest.raises(ValueError, match="1-D"):
        tandem.sort(cupy.zeros((2, 2)))


@needs_cuda_build
@pytest.mark.parametrize("key_type", [np.int32, np.uint32, np.int64, np.uint64])
@pytest.mark.parametrize("value_type", [np.float64, np.float32, np.int64, np.int32])
def test_groupby_on_the_device(key_type, value_type):
    rng = np.random.default_rng(9)
    keys = rng.integers(0, 5000, 1 << 20).astype(key_type)
    if np.dtype(key_type).kind == "i":
        keys -= 2500
    values = rng.integers(-100, 100, keys.size).astype(value_type)
    got = tandem.groupby({"k": cupy.asarray(keys), "v": cupy.asarray(values)}, by="k",
                         agg={"v": ["sum", "min", "max", "mean", "count"]})
    assert all(isinstance(a, cupy.ndarray) for a in got.values())
    uniq, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(cupy.asnumpy(got["k"]), uniq)
    np.testing.assert_array_equal(cupy.asnumpy(got["count_v"]), counts)
    sums = np.bincount(inverse, weights=values.astype(np.float64))
    np.testing.assert_allclose(cupy.asnumpy(got["sum_v"]), sums)
    np.testing.assert_allclose(cupy.asnumpy(got["mean_v"]), sums / counts)
    mins = np.full(uniq.size, np.inf)
    np.minimum.at(mins, inverse, values)
    np.testing.assert_array_equal(cupy.asnumpy(got["min_v"]), mins.astype(value_type))
    assert got["min_v"].dtype == value_type


@needs_cuda_build
def test_groupby_counts_like_torch_unique():
    keys = cupy.random.randint(0, 1 << 10, 1 << 22, dtype=cupy.int32)
    got = tandem.groupby({"k": keys}, by="k", agg={"k": "size"})
    uniq, counts = cupy.unique(keys, return_counts=True)
    cupy.testing.assert_array_equal(got["k"], uniq)
    cupy.testing.assert_array_equal(got["count"], counts)


@needs_cuda_build
def test_groupby_integer_sum_that_may_wrap():
    keys = cupy.zeros(4, dtype=cupy.int32)
    values = cupy.full(4, 2**62, dtype=cupy.int64)
    with pytest.raises(tandem.InputError, match="does not fit"):
        tandem.groupby({"k": keys, "v": values}, by="k", agg={"v": "sum"})


@needs_cuda_build
def test_groupby_device_errors():
    k = cupy.arange(10)
    with pytest.raises(ValueError, match="some columns are in GPU memory"):
        tandem.groupby({"a": k, "v": np.arange(10)}, by="a", agg={"v": "sum"})
    with pytest.raises(ValueError, match="rows"):
        tandem.groupby({"a": k, "b": cupy.arange(9)}, by=["a", "b"])


def _as_float(values):
    return values.to_numpy(dtype=np.float64, na_value=np.nan) if hasattr(values, "to_numpy") else values


@needs_cuda_build
@pytest.mark.parametrize("rows", [60, 200_000])
def test_groupby_table_engine_on_device_columns(rows):
    """Several keys, float and narrow columns, holistic aggregations: the table engine on the
    CuPy arrays in place, against the CPU engine on host copies (pandas' missing cells as NaN)."""
    pytest.importorskip("pandas")
    rng = np.random.default_rng(rows)
    host = {"a": rng.integers(0, 30, rows).astype(np.int32), "b": rng.integers(-3, 3, rows).astype(np.int64),
            "f": rng.integers(0, 10, rows).astype(np.float32), "v": rng.random(rows),
            "s": rng.integers(-50, 50, rows).astype(np.int16)}
    agg = "count(),sum(v),median(v),std(v),top(s,2),min(s),nunique(f),quantile(v,0.9)"
    got = tandem.groupby({k: cupy.asarray(v) for k, v in host.items()}, by=["a", "b", "f"], agg=agg)
    want = tandem.groupby(host, by=["a", "b", "f"], agg=agg, device="cpu")
    assert all(isinstance(x, cupy.ndarray) for x in got.values())
    assert list(got) == list(want.columns)
    assert got["a"].dtype == np.int32 and got["f"].dtype == np.float32
    for name in want.columns:
        np.testing.assert_allclose(cupy.asnumpy(got[name]).astype(np.float64), _as_float(want[name]), rtol=1e-9,
                                   equal_nan=True, err_msg=name)
    if rows == 60:  # singletons: std and the second largest are missing, NaN on the GPU
        assert bool(cupy.isnan(got["top2_s"]).any()) and got["top2_s"].dtype == np.float64
    else:
        assert got["min_s"].dtype == np.int16

