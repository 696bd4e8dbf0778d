"""tandem.info, the error classes, and how library errors arrive in Python."""
import numpy as np
import pytest

import tandem
from tandem import _tandem


def test_info():
    info = tandem.info()
    assert info["cpu"]["physical_cores"] >= 1
    assert isinstance(info["gpus"], list)
    assert info["python_module"]["cuda_built"] == bool(_tandem.cuda_built)
    assert "CPU" in tandem.info_text()


def test_error_classes():
    assert issubclass(tandem.UsageError, tandem.Error) and issubclass(tandem.UsageError, ValueError)
    assert issubclass(tandem.InputError, ValueError)
    assert issubclass(tandem.OutOfMemoryError, tandem.CudaError) and issubclass(tandem.OutOfMemoryError, MemoryError)
    assert issubclass(tandem.NoDeviceError, RuntimeError)


def test_library_errors_keep_their_message():
    with pytest.raises(tandem.UsageError, match="unknown device 'tpu'"):
        _tandem._sort(np.zeros(3), False, "tpu", 0, True)
    with pytest.raises(tandem.UsageError, match="hybrid"):
        _tandem._sort(np.zeros(3), False, "hybrid", 0, True)


def test_compiled_functions_check_their_arrays():
    with pytest.raises(TypeError, match="float16"):
        _tandem._sort(np.zeros(3, np.float16), False, "auto", 0, True)
    with pytest.raises(ValueError, match="not contiguous"):
        _tandem._sort(np.zeros(6)[::2], False, "auto", 0, True)
    with pytest.raises(ValueError, match="byte-swapped"):
        _tandem._sort(np.zeros(3, ">f8"), False, "auto", 0, True)
    with pytest.raises(ValueError, match="read-only"):
        a = np.zeros(3)
        a.flags.writeable = False
        _tandem._sort(a, False, "auto", 0, True)
    with pytest.raises(ValueError, match="3 keys but 2 values"):
        _tandem._sort_pairs(np.zeros(3), np.zeros(2), False, "auto", 0, True)
    with pytest.raises(TypeError, match="4- or 8-byte"):
        _tandem._sort_pairs(np.zeros(3), np.zeros(3, np.int16), False, "auto", 0, True)
    assert _tandem._sort_copy(np.zeros(6)[::2], False, "auto", 0, True, False) is None  # the general path's job


def test_cached_memory_is_released():
    tandem.release_memory()
    assert tandem.cached_memory()["total"] == 0
    keys = np.random.default_rng(3).integers(0, 2**32, 1 << 20, dtype=np.uint32)  # 4 MiB: pooled scratch
    out = tandem.sort(keys, device="cpu")
    assert np.array_equal(out, np.sort(keys))
    kept = tandem.cached_memory()
    assert kept["scratch"] >= keys.nbytes
    assert kept["total"] == kept["scratch"] + kept["word_tables"]
    tandem.release_memory()
    assert tandem.cached_memory() == {"scratch": 0, "word_tables": 0, "total": 0}
