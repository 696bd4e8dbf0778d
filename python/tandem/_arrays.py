"""How numpy arrays reach the library: the key types it sorts, and when an array is used in place
or copied (and why)."""
import numpy as np

# numpy dtype -> tandem's element type name
_KEY_NAMES = {("i", 4): "i32", ("i", 8): "i64", ("u", 4): "u32", ("u", 8): "u64", ("f", 4): "f32", ("f", 8): "f64"}
# Narrower numbers are widened to a key type for the library and narrowed back afterwards; both
# conversions are exact and keep the order (bool: False < True).
_WIDER = {("b", 1): np.int32, ("i", 1): np.int32, ("i", 2): np.int32, ("u", 1): np.int32, ("u", 2): np.int32,
          ("f", 2): np.float32}

MAX_THREADS = 4096  # the library's kMaxThreads, as the CLI's --threads and TANDEM_THREADS

SUPPORTED = "bool, int8 to int64, uint8 to uint64, float16, float32, float64"


def key_name(dtype):
    """tandem's name of a key dtype ('u32', 'f64', ...)."""
    return _KEY_NAMES[(dtype.kind, dtype.itemsize)]


def key_dtype(dtype, what):
    """The native-order dtype tandem sorts values of `dtype` as; TypeError when it has none."""
    key = (dtype.kind, dtype.itemsize)
    if key in _KEY_NAMES:
        return dtype.newbyteorder("=")
    if key in _WIDER:
        return np.dtype(_WIDER[key])
    hint = ""
    if dtype.kind in "mM":
        hint = " (sort its int64 view, a.view('i8'), if that order is what you want: NaT is the smallest int64)"
    raise TypeError(f"{what}: dtype {dtype} is not supported{hint}; supported: {SUPPORTED}")


def one_dimensional(a, what):
    """a as a numpy array (lists and other array-likes are converted); ValueError unless 1-D."""
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise ValueError(f"{what}: expected a 1-D array, got shape {arr.shape}")
    return arr


def usable_in_place(arr, dtype):
    """True when the library can work on arr's memory directly as `dtype`."""
    return arr.dtype == dtype and arr.flags.c_contiguous and arr.flags.aligned


def work_array(arr, what, copy):
    """(array the library works on, its key dtype). No copy when `copy` is False and arr is
    contiguous, aligned, in native byte order and of a key type; else a contiguous converted copy."""
    dtype = key_dtype(arr.dtype, what)
    if not copy and usable_in_place(arr, dtype):
        return arr, dtype
    return np.array(arr, dtype=dtype, order="C", copy=True), dtype


def writable_target(a, what):
    """a, checked as the target of an in-place operation."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{what}: inplace=True needs a numpy array (or a GPU array), got {type(a).__name__}")
    if a.ndim != 1:
        raise ValueError(f"{what}: expected a 1-D array, got shape {a.shape}")
    if not a.flags.writeable:
        raise ValueError(f"{what}: the array is read-only; use inplace=False for a sorted copy")
    return a


def threads_arg(threads):
    if threads is None:
        return 0
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or not 1 <= threads <= MAX_THREADS:
        raise ValueError(f"threads: expected an integer from 1 to {MAX_THREADS} or None, got {threads!r}")
    return int(threads)


def nan_last_arg(nan):
    if nan == "last":
        return True
    if nan == "total":
        return False
    raise ValueError(f"nan: expected 'last' (numpy's order) or 'total' (tandem's key order), got {nan!r}")


def with_report(result, report, explain):
    """The explain convention: the result alone, or (result, tandem.Report) with explain=True."""
    return (result, report) if explain else result
