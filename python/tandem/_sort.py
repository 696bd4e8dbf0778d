"""tandem.sort, tandem.argsort and tandem.sort_by_key for numpy arrays and GPU arrays."""
import numpy as np

from . import _device, _tandem
from ._arrays import (nan_last_arg, one_dimensional, threads_arg, with_report, work_array, writable_target)


def _host_device(device, what):
    if device not in ("auto", "cpu", "gpu"):
        raise ValueError(f"{what}: device must be 'auto', 'cpu' or 'gpu', got {device!r}")
    return device


def sort(a, descending=False, device="auto", inplace=False, *, nan="last", threads=None, explain=False):
    """Sorts a 1-D array (numpy, or CuPy/PyTorch/anything with __cuda_array_interface__ or
    __dlpack__ in GPU memory, sorted there on the caller's stream).

    Returns the sorted copy (an array of a's kind and dtype), or None with inplace=True (a is sorted
    in place, without a copy when it is contiguous and of a 4- or 8-byte type). nan="last" (default)
    places NaNs after every number in both directions, as numpy and pandas do; nan="total" keeps
    tandem's total order (NaNs with the sign bit first). -0.0 sorts before +0.0. With explain=True
    the result comes as (result, tandem.Report).
    """
    if type(a) is np.ndarray and not inplace and threads is None and nan == "last":
        result = _tandem._sort_copy(a, descending, device, 0, True, explain)  # the common case in one call
        if result is not None:
            return result
    nan_last = nan_last_arg(nan)
    dev = _device.device_array(a)
    if dev is not None:
        result, report = _device.sort(dev, descending, device, inplace, nan_last, "sort")
        return with_report(result, report, explain)
    device = _host_device(device, "sort")
    threads = threads_arg(threads)
    if inplace:
        target = writable_target(a, "sort")
        work, _ = work_array(target, "sort", copy=False)
        report = _tandem._sort(work, bool(descending), device, threads, nan_last)
        if work is not target:
            target[...] = work
        return with_report(None, report, explain)
    arr = one_dimensional(a, "sort")
    work, dtype = work_array(arr, "sort", copy=True)
    report = _tandem._sort(work, bool(descending), device, threads, nan_last)
    return with_report(work if dtype == arr.dtype else work.astype(arr.dtype), report, explain)


def argsort(a, stable=True, descending=False, device="auto", *, nan="last", threads=None, explain=False):
    """The int64 positions that sort a 1-D array (numpy's argsort, kind="stable"): equal keys keep
    their input order, NaNs last (nan="last") in input order. Every tandem sort is stable, so
    stable=False gives the same answer. GPU arrays give positions on the GPU."""
    del stable  # tandem's sorts are stable on every path
    nan_last = nan_last_arg(nan)
    dev = _device.device_array(a)
    if dev is not None:
        result, report = _device.argsort(dev, descending, device, nan_last)
        return with_report(result, report, explain)
    device = _host_device(device, "argsort")
    arr = one_dimensional(a, "argsort")
    work, _ = work_array(arr, "argsort", copy=False)  # read only: the library sorts a copy of its own
    order, report = _tandem._argsort(work, bool(descending), device, threads_arg(threads), nan_last)
    return with_report(order, report, explain)


def _carried_as_bits(values):
    """Values whose bits the library can move with the keys: 1-D, 4 or 8 bytes, not objects."""
    return values.ndim == 1 and values.dtype.itemsize in (4, 8) and not values.dtype.hasobject


def sort_by_key(keys, values, descending=False, device="auto", inplace=False, *, nan="last", threads=None,
                explain=False):
    """Sorts keys and applies the same permutation to values (stable: equal keys keep the input
    order of their values). values: any dtype; 1-D values of 4 or 8 bytes travel with the keys as
    bits, anything else (other widths, objects, rows of a 2-D array) is gathered through the
    sorting permutation. Returns (sorted keys, sorted values), or None with inplace=True."""
    nan_last = nan_last_arg(nan)
    dev = _device.device_array(keys)
    if dev is not None:
        result, report = _device.sort_by_key(dev, _device.device_array(values), descending, device, inplace, nan_last)
        return with_report(result, report, explain)
    device = _host_device(device, "sort_by_key")
    threads = threads_arg(threads)
    if inplace:
        karr = writable_target(keys, "sort_by_key (keys)")
        if not isinstance(values, np.ndarray):
            raise TypeError(f"sort_by_key (values): inplace=True needs a numpy array, got {type(values).__name__}")
        if not values.flags.writeable:
            raise ValueError("sort_by_key (values): the array is read-only; use inplace=False for sorted copies")
        varr = values
    else:
        karr = one_dimensional(keys, "sort_by_key (keys)")
        varr = np.asarray(values)
    if varr.ndim == 0 or len(varr) != len(karr):
        raise ValueError(f"sort_by_key: {len(karr)} keys but {0 if varr.ndim == 0 else len(varr)} values")
    if _carried_as_bits(varr):
        kwork, kdtype = work_array(karr, "sort_by_key (keys)", copy=not inplace)
        vwork = varr if inplace and varr.flags.c_contiguous else np.array(varr, order="C", copy=True)
        report = _tandem._sort_pairs(kwork, vwork, bool(descending), device, threads, nan_last)
    else:
        kwork, kdtype = work_array(karr, "sort_by_key (keys)", copy=False)
        order, report = _tandem._argsort(kwork, bool(descending), device, threads, nan_last)
        kwork = kwork[order]
        vwork = varr.take(order, axis=0)
    if inplace:
        if kwork is not karr:
            karr[...] = kwork
        if vwork is not varr:
            varr[...] = vwork
        return with_report(None, report, explain)
    sorted_keys = kwork if kdtype == karr.dtype else kwork.astype(karr.dtype)
    return with_report((sorted_keys, vwork), report, explain)
