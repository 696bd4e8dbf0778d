"""Arrays in GPU memory: CuPy and PyTorch arrays, anything exposing __cuda_array_interface__, and
__dlpack__ producers on a CUDA device. They are worked on where they are, on the stream their
library calls current (CuPy's current stream, torch.cuda.current_stream()), never copied to the
host. Results are arrays of the input's library, on its device."""
import numpy as np

from . import _tandem
from ._arrays import key_dtype, key_name
from .errors import NoDeviceError

_DLPACK_CUDA = (2, 13)  # kDLCUDA, kDLCUDAManaged


def device_array(obj):
    """A DeviceArray when obj lives in GPU memory; None otherwise (numpy arrays, lists, ...)."""
    if obj is None or isinstance(obj, (np.ndarray, list, tuple, bytes, str)):
        return None
    try:
        cai = obj.__cuda_array_interface__
    except AttributeError:  # torch raises it for tensors in host memory
        cai = None
    if cai is None:
        obj = _from_dlpack(obj)
        if obj is None:
            return None
        cai = obj.__cuda_array_interface__
    return DeviceArray(obj, cai)


def _from_dlpack(obj):
    dlpack_device = getattr(obj, "__dlpack_device__", None)
    if dlpack_device is None or int(dlpack_device()[0]) not in _DLPACK_CUDA:
        return None
    try:
        import cupy
        return cupy.from_dlpack(obj)
    except ImportError:
        pass
    try:
        import torch
        return torch.from_dlpack(obj)
    except ImportError:
        raise TypeError("a GPU array given through __dlpack__ is read through CuPy or PyTorch; neither is installed") from None


def _library(obj):
    """(array object, 'cupy' | 'torch' | None): arrays of other libraries are viewed through CuPy
    (no copy) when it is installed, so that results can be allocated."""
    root = type(obj).__module__.split(".")[0]
    if root in ("cupy", "torch"):
        return obj, root
    try:
        import cupy
        return cupy.asarray(obj), "cupy"
    except ImportError:
        return obj, None


class DeviceArray:
    """A 1-D array in GPU memory: its pointer, dtype, length, layout and the caller's stream."""

    def __init__(self, obj, cai):
        shape = tuple(cai["shape"])
        if len(shape) != 1:
            raise ValueError(f"expected a 1-D array, got shape {shape}")
        self.obj, self.lib = _library(obj)
        if self.lib is not None and self.obj is not obj:
            cai = self.obj.__cuda_array_interface__
        self.dtype = np.dtype(cai["typestr"])
        self.n = shape[0]
        self.ptr, self.readonly = cai["data"]
        strides = cai.get("strides")
        self.contiguous = strides is None or self.n <= 1 or tuple(strides) == (self.dtype.itemsize,)
        self.stream = self._current_stream(cai)

    def _current_stream(self, cai):
        if self.lib == "cupy":
            import cupy
            with self.obj.device:
                return cupy.cuda.get_current_stream().ptr
        if self.lib == "torch":
            import torch
            return torch.cuda.current_stream(self.obj.device).cuda_stream
        return cai.get("stream") or 0  # v3: 1 = the legacy default stream, 2 = per-thread

    def _need_library(self, what):
        if self.lib is None:
            raise TypeError(f"{what}: results for this GPU array are allocated through CuPy or PyTorch; neither is installed")

    def _torch_dtype(self, dtype):
        import torch
        return getattr(torch, np.dtype(dtype).name)

    def wrap(self, obj):
        cai = obj.__cuda_array_interface__
        return DeviceArray(obj, cai)

    def copy_as(self, dtype, what):
        """A contiguous copy converted to dtype, on the same device and stream."""
        self._need_library(what)
        if self.lib == "cupy":
            return self.wrap(self.obj.astype(dtype, order="C", copy=True))
        return self.wrap(self.obj.to(self._torch_dtype(dtype), copy=True).contiguous())

    def empty(self, n, dtype, what):
        self._need_library(what)
        if self.lib == "cupy":
            import cupy
            with self.obj.device:
                return self.wrap(cupy.empty(n, dtype=dtype))
        import torch
        return self.wrap(torch.empty(n, dtype=self._torch_dtype(dtype), device=self.obj.device))

    def astype(self, dtype):
        if self.lib == "cupy":
            return self.obj.astype(dtype)
        return self.obj.to(self._torch_dtype(dtype))

    def assign_from(self, other):
        if self.lib == "cupy":
            self.obj[...] = other.obj
        else:
            self.obj.copy_(other.obj)

    def take(self, positions):
        return self.obj[positions.obj]


def _check(dev, device, what):
    if device == "cpu":
        raise ValueError(f"{what}: the array is in GPU memory; device='cpu' would copy it to the host "
                         "(pass a host array, e.g. cupy.asnumpy(a) or t.cpu().numpy(), to sort on the CPU)")
    if device not in ("auto", "gpu"):
        raise ValueError(f"{what}: device must be 'auto', 'cpu' or 'gpu', got {device!r}")
    if not _tandem.cuda_built:
        raise NoDeviceError(f"{what}: the array is in GPU memory but this build of tandem has no CUDA support")


def _working_copy(dev, dtype, inplace, what):
    """The array the library sorts: dev itself (in place, when its layout allows) or a copy."""
    if inplace:
        if dev.readonly:
            raise ValueError(f"{what}: the array is read-only; use inplace=False for a sorted copy")
        if dev.dtype == dtype and dev.contiguous:
            return dev
    return dev.copy_as(dtype, what)


def sort(dev, descending, device, inplace, nan_last, what):
    _check(dev, device, what)
    dtype = key_dtype(dev.dtype, what)
    if not inplace and dev.dtype == dtype and dev.contiguous:
        # The sort reads the input in its first pass and writes the new array: no copy first.
        out = dev.empty(dev.n, dtype, what)
        report = _tandem._device_sort_copy(dev.ptr, out.ptr, dev.n, key_name(dtype), bool(descending), nan_last,
                                           dev.stream)
        return out.obj, report
    work = _working_copy(dev, dtype, inplace, what)
    report = _tandem._device_sort(work.ptr, work.n, key_name(dtype), bool(descending), nan_last, work.stream)
    if inplace:
        if work is not dev:
            dev.assign_from(work)
        return None, report
    return (work.obj if dtype == dev.dtype else work.astype(dev.dtype)), report


def argsort(dev, descending, device, nan_last):
    _check(dev, device, "argsort")
    dtype = key_dtype(dev.dtype, "argsort")
    src = dev if dev.dtype == dtype and dev.contiguous else dev.copy_as(dtype, "argsort")
    scratch = src.empty(src.n, dtype, "argsort")
    positions = src.empty(src.n, np.int64, "argsort")
    report = _tandem._device_argsort(src.ptr, scratch.ptr, positions.ptr, src.n, key_name(dtype), bool(descending),
                                     nan_last, src.stream)
    return positions.obj, report


def sort_by_key(keys, values, descending, device, inplace, nan_last):
    what = "sort_by_key"
    _check(keys, device, what)
    if values is None:
        raise ValueError(f"{what}: the keys are in GPU memory but the values are not (move both to one place)")
    if values.lib != keys.lib:
        raise ValueError(f"{what}: keys from {keys.lib} but values from {values.lib}; use arrays of one library")
    if values.n != keys.n:
        raise ValueError(f"{what}: {keys.n} keys but {values.n} values")
    dtype = key_dtype(keys.dtype, what)
    if values.dtype.itemsize in (4, 8):
        kwork = _working_copy(keys, dtype, inplace, what)
        vwork = _working_copy(values, values.dtype, inplace, what)
        report = _tandem._device_sort_pairs(kwork.ptr, vwork.ptr, values.dtype.itemsize, kwork.n, key_name(dtype),
                                            bool(descending), nan_last, kwork.stream)
        if inplace:
            if kwork is not keys:
                keys.assign_from(kwork)
            if vwork is not values:
                values.assign_from(vwork)
            return None, report
        sorted_keys = kwork.obj if dtype == keys.dtype else kwork.astype(keys.dtype)
        return (sorted_keys, vwork.obj), report
    positions, report = argsort(keys, descending, device, nan_last)
    positions = keys.wrap(positions)
    sorted_keys, sorted_values = keys.take(positions), values.take(positions)
    if inplace:
        keys.assign_from(keys.wrap(sorted_keys))
        values.assign_from(values.wrap(sorted_values))
        return None, report
    return (sorted_keys, sorted_values), report


# ---- group-by ------------------------------------------------------------------------------------
_DEVICE_OPS = ("size", "count", "sum", "min", "max", "mean")


def groupby(columns, by, aggs):
    """Group-by of GPU columns: one integer key column, size/count/sum/min/max/mean of at most one
    value column. aggs: (op, column, output name) triples. Returns {name: array} sorted by key."""
    what = "groupby"
    if len(by) != 1:
        raise ValueError(f"{what}: GPU columns are grouped by one key column, got {len(by)}")
    keys = columns[by[0]]
    _check(keys, "gpu", what)
    if keys.dtype.kind not in "iub":
        raise TypeError(f"{what}: GPU key column '{by[0]}' is {keys.dtype}; GPU group-by takes integer keys")
    kdtype = key_dtype(keys.dtype, what)
    values_name = None
    for op, column, _ in aggs:
        if op not in _DEVICE_OPS:
            raise ValueError(f"{what}: '{op}' is not available for GPU columns (expected one of {', '.join(_DEVICE_OPS)})")
        if op != "size":
            if values_name not in (None, column):
                raise ValueError(f"{what}: GPU columns aggregate one value column, got '{values_name}' and '{column}'")
            values_name = column
    kwork = keys if keys.dtype == kdtype and keys.contiguous else keys.copy_as(kdtype, what)
    values = vwork = None
    acc = None
    if values_name is not None:
        values = columns[values_name]
        if values.n != keys.n:
            raise ValueError(f"{what}: column '{values_name}' has {values.n} rows, '{by[0]}' {keys.n}")
        if values.dtype.kind not in "iubf":
            raise TypeError(f"{what}: GPU column '{values_name}' is {values.dtype}, not a number")
        acc = np.dtype(np.float64 if values.dtype.kind == "f" else np.int64)
        vwork = values if values.dtype == acc and values.contiguous else values.copy_as(acc, what)
    out = {}

    def allocate(groups):
        out[by[0]] = kwork.empty(groups, kdtype, what)
        wanted = {op: kwork.empty(groups, np.int64 if op in ("size", "count") else (np.float64 if op == "mean" else acc), what)
                  for op, _, _ in aggs}
        count = wanted.get("size") or wanted.get("count")
        for op, _, name in aggs:
            out[name] = wanted[op]
        return [out[by[0]].ptr, count.ptr if count else 0] + [wanted[op].ptr if op in wanted else 0
                                                              for op in ("sum", "min", "max", "mean")]

    report = _tandem._device_groupby(kwork.ptr, key_name(kdtype), vwork.ptr if vwork else 0,
                                     key_name(acc) if acc is not None else "", kwork.n, kwork.stream, allocate)
    result, seen = {}, set()
    for name, arr in out.items():  # size and count share one array: the second name gets a copy
        result[name] = arr.obj.clone() if id(arr) in seen and kwork.lib == "torch" else (
            arr.obj.copy() if id(arr) in seen else arr.obj)
        seen.add(id(arr))
    for op, _, name in aggs:
        if op in ("min", "max") and values.dtype != acc:
            result[name] = out[name].astype(values.dtype)
    if kdtype != keys.dtype:
        result[by[0]] = out[by[0]].astype(keys.dtype)
    return result, report


# ---- group-by of GPU columns through the table engine ---------------------------------------------
# tandem's column types for the dtypes GPU arrays come in; narrower ones are widened (a copy).
_TABLE_TYPES = {"int32": "i32", "int64": "i64", "uint32": "u32", "uint64": "u64", "float32": "f32", "float64": "f64"}
_NUMPY_TYPES = {kind: np.dtype(name) for name, kind in _TABLE_TYPES.items()}
_WIDER = {"b": np.uint32, "i": np.int32, "u": np.uint32, "f": np.float32}
_SAME_TYPE_OPS = ("min", "max", "first", "last", "top")  # results of the input column's type


class _Memory:
    """Device memory owned by `owner` (a result table), shown through __cuda_array_interface__."""

    def __init__(self, ptr, n, dtype, owner):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": np.dtype(dtype).str, "data": (ptr, False),
                                         "version": 3, "strides": None}
        self._owner = owner


def _wrap_memory(like, ptr, n, dtype, owner):
    """An array of like's library on its device viewing memory that `owner` keeps alive."""
    if n == 0:
        return like.empty(0, dtype, "groupby").obj
    memory = _Memory(ptr, n, dtype, owner)
    if like.lib == "cupy":
        import cupy
        with like.obj.device:
            return cupy.asarray(memory)
    import torch
    return torch.as_tensor(memory, device=like.obj.device)


def _missing_as_nan(like, values, validity_ptr, n, owner):
    """values with its missing rows (validity bit 0) as NaN: floats in place, integers as float64."""
    bits = _wrap_memory(like, validity_ptr, (n + 7) // 8, np.uint8, owner)
    if like.lib == "cupy":
        import cupy
        present = cupy.unpackbits(bits, bitorder="little")[:n].astype(bool)
        out = values if values.dtype.kind == "f" else values.astype(np.float64)
        out[~present] = cupy.nan
        return out
    import torch
    shifts = torch.arange(8, device=bits.device, dtype=torch.uint8)
    present = ((bits.unsqueeze(1) >> shifts) & 1).flatten()[:n].bool()
    out = values if values.is_floating_point() else values.to(torch.float64)
    out[~present] = float("nan")
    return out


def _synchronize(dev):
    """Waits for the caller's stream, so its work on the columns is done before tandem reads them."""
    if dev.lib == "cupy":
        import cupy
        with dev.obj.device:
            cupy.cuda.get_current_stream().synchronize()
    elif dev.lib == "torch":
        import torch
        torch.cuda.current_stream(dev.obj.device).synchronize()


def _table_column(name, dev, n, what):
    if dev.n != n:
        raise ValueError(f"{what}: column '{name}' has {dev.n} rows, the first column {n}")
    if dev.dtype.kind not in "biuf":
        raise TypeError(f"{what}: GPU column '{name}' is {dev.dtype}, not a number")
    if dev.dtype.name in _TABLE_TYPES and dev.contiguous:
        return dev
    wide = np.dtype(dev.dtype) if dev.dtype.name in _TABLE_TYPES else np.dtype(_WIDER[dev.dtype.kind])
    return dev.copy_as(wide, what)


def _output_names(op, column, n, name):
    if op == "top":
        return [f"{name}{i}" if name else f"top{i}_{column}" for i in range(1, n + 1)]
    return [name or f"{op}_{column}"]


def groupby_table(columns, by, aggs, threads):
    """Group-by of GPU columns on tandem's table engine, used where they are
    (tandem::DeviceTable::borrow, then groupby_on_device): several key columns, every aggregation.
    aggs: (python op, column, q, n, name) and their library form. Returns ({name: array}, report):
    arrays of the input's library on its device, viewing the result's device memory; missing cells
    (var of one value, top past a group's size, ...) are NaN, in float64 for integer columns."""
    what = "groupby"
    first = next(iter(columns.values()))
    for dev in columns.values():
        _check(dev, "gpu", what)
        if dev.lib is None:
            dev._need_library(what)
    work = {name: _table_column(name, dev, first.n, what) for name, dev in columns.items()}
    for dev in work.values():
        _synchronize(dev)
    python_aggs, library_aggs = aggs
    device = first.obj.device
    with (device if first.lib == "cupy" else _torch_device(device)):
        table = _tandem._DeviceTable.borrow(
            [(name, _TABLE_TYPES[dev.dtype.name], dev.ptr) for name, dev in work.items()], first.n,
            [dev.obj for dev in work.values()], threads)
        result, report = table.groupby_on_device([str(b) for b in by], library_aggs, "gpu", threads)
    rows = result.rows
    out, promoted = {}, set()  # promoted: integer columns made float64 to hold NaN for missing cells
    for name, kind, ptr, validity, missing in result.device_columns():
        dtype = _NUMPY_TYPES[kind]
        values = _wrap_memory(first, ptr, rows, dtype, result)
        out[name] = _missing_as_nan(first, values, validity, rows, result) if missing else values
        if missing and dtype.kind != "f":
            promoted.add(name)
    # Narrow inputs were widened: their keys and same-type aggregates go back to the input's dtype.
    back = {b: b for b in by}
    for op, column, q, n, name in python_aggs:
        if op in _SAME_TYPE_OPS:
            for out_name in _output_names(op, column, n, name):
                back[out_name] = column
    for out_name, column in back.items():
        source = columns[column]
        if work[column] is not source and out_name in out and out_name not in promoted:
            out[out_name] = source.wrap(out[out_name]).astype(source.dtype)
    return out, report


def _torch_device(device):
    import torch
    return torch.cuda.device(device)
