"""tandem: sorting, group-by, word count and top-k on the CPU and GPUs, for numpy, pandas, CuPy
and PyTorch data.

    import numpy as np, tandem
    tandem.sort(np.random.rand(1 << 20))                       # numpy.sort's answer
    tandem.groupby(df, by=["id1"], agg={"v1": "sum"})          # a pandas DataFrame
    sorted_a, report = tandem.sort(a, explain=True)            # what ran where, and how long

Every function takes explain=False; with explain=True it returns (result, tandem.Report).
See docs/python.md.
"""
try:
    from . import _tandem
except ImportError as e:  # pragma: no cover - a source checkout without the compiled module
    raise ImportError(
        "tandem's compiled module (tandem._tandem) could not be loaded: build it (cmake with TANDEM_PYTHON, then "
        f"PYTHONPATH=<build>/python) or install the package (pip install --no-build-isolation ./python): {e}") from e

from ._arrow import Table
from ._sort import argsort, sort, sort_by_key
from ._table_sort import sort_csv, sort_values
from ._tables import DeviceTable, generate_groupby, groupby, read_csv
from ._text import topk, wordcount
from .errors import CudaError, Error, InputError, NoDeviceError, OutOfMemoryError, UsageError

Report = _tandem.Report
Stage = _tandem.Stage
__version__ = "0.1.0"


def info():
    """The machine as tandem sees it: CPU (model, cores, caches, NUMA), CUDA devices, and whether
    this build has CUDA support; a dict (str(tandem.info_text()) for a readable form)."""
    import json
    info = json.loads(_tandem._info())
    info["python_module"] = {"cuda_built": bool(_tandem.cuda_built), "version": __version__}
    return info


def cached_memory():
    """Bytes tandem keeps between calls so that the next call of a similar size takes no page faults:
    a dict with "scratch" (CPU sort and group-by scratch), "word_tables" (word count tables) and
    "total"."""
    scratch, word_tables = _tandem._cached_memory()
    return {"scratch": scratch, "word_tables": word_tables, "total": scratch + word_tables}


def release_memory():
    """Gives the memory of tandem.cached_memory() back to the system (calls running meanwhile keep
    theirs)."""
    _tandem._release_cached_memory()


def info_text():
    """tandem.info() as readable text (as `tandem info` prints it)."""
    return _tandem._describe()


__all__ = ["sort", "argsort", "sort_by_key", "sort_values", "sort_csv", "groupby", "DeviceTable", "generate_groupby", "read_csv", "wordcount", "topk", "info", "info_text",
           "cached_memory", "release_memory", "Table",
           "Report", "Stage", "Error", "UsageError", "InputError", "NoDeviceError", "CudaError", "OutOfMemoryError"]
