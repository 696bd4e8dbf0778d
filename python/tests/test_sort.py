"""tandem.sort, argsort and sort_by_key against numpy."""
import os
import signal
import threading
import time

import numpy as np
import pytest

import tandem

KEY_TYPES = [np.int32, np.int64, np.uint32, np.uint64, np.float32, np.float64]
WIDENED_TYPES = [np.bool_, np.int8, np.int16, np.uint8, np.uint16, np.float16]
ALL_TYPES = KEY_TYPES + WIDENED_TYPES


def random_array(dtype, n, seed=1):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dtype.kind == "f":
        return (rng.standard_normal(n) * 1000).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("dtype", ALL_TYPES)
@pytest.mark.parametrize("n", [0, 1, 2, 17, 1000, 100_000])
def test_sort_equals_numpy(dtype, n):
    a = random_array(dtype, n)
    before = a.copy()
    out = tandem.sort(a)
    assert out.dtype == a.dtype and out.shape == a.shape
    np.testing.assert_array_equal(out, np.sort(a))
    np.testing.assert_array_equal(a, before)  # the input is left alone


@pytest.mark.parametrize("dtype", ALL_TYPES)
def test_sort_descending(dtype):
    a = random_array(dtype, 5000)
    np.testing.assert_array_equal(tandem.sort(a, descending=True), np.sort(a)[::-1])


@pytest.mark.parametrize("dtype", ALL_TYPES)
def test_sort_in_place(dtype):
    a = random_array(dtype, 3000)
    expected = np.sort(a)
    assert tandem.sort(a, inplace=True) is None
    np.testing.assert_array_equal(a, expected)


def test_sort_in_place_uses_the_callers_memory():
    a = random_array(np.uint32, 100_000)
    address = a.__array_interface__["data"][0]
    tandem.sort(a, inplace=True)
    assert a.__array_interface__["data"][0] == address
    assert np.all(a[:-1] <= a[1:])


def test_sort_list_input():
    np.testing.assert_array_equal(tandem.sort([3, 1, 2]), [1, 2, 3])


def test_sort_strided_view():
    base = random_array(np.float64, 10_000)
    view = base[::3]
    np.testing.assert_array_equal(tandem.sort(view), np.sort(view))
    tandem.sort(view, inplace=True)  # written back through the strides
    assert np.all(np.diff(base[::3]) >= 0)


def test_sort_byte_swapped():
    a = random_array(np.int32, 4000).astype(">i4")
    out = tandem.sort(a)
    np.testing.assert_array_equal(out, np.sort(a))
    assert out.dtype == a.dtype
    tandem.sort(a, inplace=True)
    np.testing.assert_array_equal(a, np.sort(a))


def test_sort_read_only():
    a = random_array(np.float32, 1000)
    a.flags.writeable = False
    np.testing.assert_array_equal(tandem.sort(a), np.sort(a))
    with pytest.raises(ValueError, match="read-only"):
        tandem.sort(a, inplace=True)


@pytest.mark.parametrize("bad", [np.complex128, np.object_, "datetime64[ns]", "U3", np.longdouble])
def test_sort_unsupported_dtype(bad):
    a = np.zeros(4, dtype=bad)
    with pytest.raises(TypeError, match="not supported"):
        tandem.sort(a)


def test_sort_bad_shapes_and_values():
    with pytest.raises(ValueError, match="1-D"):
        tandem.sort(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="1-D"):
        tandem.sort(np.float64(3))
    with pytest.raises(ValueError, match="device"):
        tandem.sort(np.zeros(4), device="tpu")
    with pytest.raises(ValueError, match="nan"):
        tandem.sort(np.zeros(4), nan="first")
    with pytest.raises(ValueError, match="threads"):
        tandem.sort(np.zeros(4), threads=0)
    with pytest.raises(TypeError, match="numpy array"):
        tandem.sort([1, 2], inplace=True)


def float_specials(dtype):
    nan = np.array([np.nan], dtype=dtype)[0]
    negative_nan = -nan
    assert np.signbit(negative_nan)
    return np.array([1.5, nan, -0.0, np.inf, 0.0, -np.inf, negative_nan, -2.0, 0.0, -0.0, nan], dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_nan_last_like_numpy(dtype):
    a = float_specials(dtype)
    out = tandem.sort(a)
    expected = np.sort(a)
    np.testing.assert_array_equal(out, expected)  # NaNs compare equal in assert_array_equal
    assert np.isnan(out[-3:]).all() and not np.isnan(out[:-3]).any()
    # numpy sees -0.0 == 0.0; tandem's order puts -0.0 first
    zeros = out[(out == 0)]
    assert list(np.signbit(zeros)) == [True, True, False, False]
    # the bits are all kept: the same multiset of bit patterns
    assert sorted(out.view(np.uint16 if dtype == np.float16 else (np.uint32 if dtype == np.float32 else np.uint64))) == \
        sorted(a.view(np.uint16 if dtype == np.float16 else (np.uint32 if dtype == np.float32 else np.uint64)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_last_descending(dtype):
    a = float_specials(dtype)
    out = tandem.sort(a, descending=True)
    assert np.isnan(out[-3:]).all()
    np.testing.assert_array_equal(out[:-3], np.sort(a)[:-3][::-1])


def test_nan_total_order():
    a = float_specials(np.float64)
    out = tandem.sort(a, nan="total")
    assert np.isnan(out[0]) and np.signbit(out[0])  # -NaN first
    assert np.isnan(out[-2:]).all() and not np.signbit(out[-2:]).any()


def test_nan_sorted_on_a_large_array():
    rng = np.random.default_rng(5)
    a = rng.standard_normal(200_000)
    a[rng.integers(0, a.size, 500)] = np.nan
    a[rng.integers(0, a.size, 500)] = -np.nan
    np.testing.assert_array_equal(tandem.sort(a), np.sort(a))
    tandem.sort(a, inplace=True)
    np.testing.assert_array_equal(a, np.sort(a))


@pytest.mark.parametrize("dtype", ALL_TYPES)
@pytest.mark.parametrize("n", [0, 1, 50, 20_000])
def test_argsort_equals_numpy_stable(dtype, n):
    a = random_array(dtype, n)
    if n > 10:
        a[::7] = a[0]  # many ties: positions of equal keys must stay in input order
    order = tandem.argsort(a)
    assert order.dtype == np.int64
    np.testing.assert_array_equal(order, np.argsort(a, kind="stable"))


def test_argsort_nans_in_input_order():
    a = float_specials(np.float64)
    np.testing.assert_array_equal(tandem.argsort(a), np.argsort(a, kind="stable"))


def test_argsort_descending_is_stable():
    a = np.array([3, 1, 3, 2, 1, 3], dtype=np.int64)
    np.testing.assert_array_equal(tandem.argsort(a, descending=True), [0, 2, 5, 3, 1, 4])


def test_argsort_strided_and_read_only():
    base = random_array(np.float32, 9000)
    view = base[1::2]
    view.flags.writeable = False
    np.testing.assert_array_equal(tandem.argsort(view), np.argsort(view, kind="stable"))


@pytest.mark.parametrize("key_type", KEY_TYPES)
@pytest.mark.parametrize("value_type", [np.uint32, np.float64, np.int8, np.complex128, object])
def test_sort_by_key(key_type, value_type):
    keys = random_array(key_type, 5000)
    keys[::3] = keys[0]
    values = np.arange(5000).astype(value_type)
    order = np.argsort(keys, kind="stable")
    sorted_keys, sorted_values = tandem.sort_by_key(keys, values)
    np.testing.assert_array_equal(sorted_keys, keys[order])
    np.testing.assert_array_equal(sorted_values, values[order])
    assert sorted_values.dtype == values.dtype


def test_sort_by_key_rows_of_a_2d_array():
    keys = np.array([3, 1, 2])
    rows = np.array([[30, 31], [10, 11], [20, 21]])
    k, v = tandem.sort_by_key(keys, rows)
    np.testing.assert_array_equal(v, [[10, 11], [20, 21], [30, 31]])


def test_sort_by_key_in_place():
    keys = random_array(np.float64, 3000)
    values = np.arange(3000, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    expected_keys, expected_values = keys[order], values[order]
    assert tandem.sort_by_key(keys, values, inplace=True) is None
    np.testing.assert_array_equal(keys, expected_keys)
    np.testing.assert_array_equal(values, expected_values)


def test_sort_by_key_descending_stable():
    keys = np.array([1, 2, 1, 2], dtype=np.uint64)
    values = np.array([0, 1, 2, 3], dtype=np.uint32)
    k, v = tandem.sort_by_key(keys, values, descending=True)
    np.testing.assert_array_equal(k, [2, 2, 1, 1])
    np.testing.assert_array_equal(v, [1, 3, 0, 2])


def test_sort_by_key_nans_last():
    keys = float_specials(np.float64)
    values = np.arange(keys.size, dtype=np.uint64)
    k, v = tandem.sort_by_key(keys, values)
    assert np.isnan(k[-3:]).all()
    np.testing.assert_array_equal(keys[v], k)  # values moved with their keys


def test_sort_by_key_mismatched_lengths():
    with pytest.raises(ValueError, match="3 keys but 2 values"):
        tandem.sort_by_key(np.zeros(3), np.zeros(2))
    with pytest.raises(ValueError, match="read-only"):
        v = np.zeros(3)
        v.flags.writeable = False
        tandem.sort_by_key(np.zeros(3), v, inplace=True)


def test_explain_returns_the_report():
    a = random_array(np.uint32, 1000)
    out, report = tandem.sort(a, explain=True)
    np.testing.assert_array_equal(out, np.sort(a))
    assert isinstance(report, tandem.Report)
    assert report.operation == "sort"
    assert report.stages and report.stages[0].where == "cpu"
    assert report.details["path"] in ("cpu-radix", "cpu-comparison", "gpu-pipeline")
    assert "sort" in str(report) and report.total_seconds >= 0
    assert report.to_dict()["operation"] == "sort"
    none, report = tandem.sort(a, inplace=True, explain=True)
    assert none is None and report.operation == "sort"
    order, report = tandem.argsort(a, explain=True)
    assert report.operation == "argsort"


def test_device_gpu_without_a_gpu():
    if tandem.info()["gpus"]:
        pytest.skip("this machine has a GPU")
    with pytest.raises(tandem.NoDeviceError):
        tandem.sort(np.arange(10), device="gpu")


def test_ctrl_c_is_raised_by_the_call_after_the_work():
    """SIGINT during a long sort: the sort finishes (the array is sorted, never half), then the call
    raises KeyboardInterrupt instead of returning."""
    a = np.random.default_rng(3).random(1 << 25)
    # A shell's background job starts with SIGINT ignored, and Python then installs no handler:
    # install Python's own for the test.
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT))
    returned = False
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            tandem.sort(a, inplace=True, threads=1, device="cpu")  # about a second on one core
            returned = True
            time.sleep(5)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old)
    assert not returned
    assert np.all(a[:-1] <= a[1:])
