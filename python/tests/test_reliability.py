"""Hostile inputs through Python: out of memory is MemoryError (the interpreter survives), any label
pandas takes is a column name, narrow key types come back as they went in, bad arguments are
clear errors."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

import tandem


def run_python(code, env=None):
    """Runs code in a fresh interpreter (for process-wide limits); returns (exit code, output)."""
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       env={**os.environ, **(env or {})}, timeout=120)
    return p.returncode, p.stdout + p.stderr


# ---- out of memory, environment ----------------------------------------------------------------------------
def test_read_csv_out_of_memory_is_memory_error(tmp_path):
    path = tmp_path / "big.csv"
    with open(path, "w") as f:
        f.write("k,v\n")
        f.write("".join(f"k{i % 97},{i}\n" for i in range(400_000)))
    small = tmp_path / "small.csv"
    small.write_text("k,v\na,1\n")
    # Address space for the interpreter, the module and its two threads (started by a first read),
    # not for the file's pieces and columns.
    code, out = run_python(f"""
        import resource, tandem
        tandem.read_csv({str(small)!r}, threads=2)
        used = int(open("/proc/self/statm").read().split()[0]) * 4096
        resource.setrlimit(resource.RLIMIT_AS, (used + (6 << 20), used + (6 << 20)))
        try:
            tandem.read_csv({str(path)!r}, threads=2)
            print("read")
        except MemoryError as e:
            print("MemoryError", e)
        """)
    assert code == 0, out
    assert "MemoryError" in out or "read" in out, out
    assert "MemoryError" in out, out  # 6 MiB cannot hold a 5 MiB file and its columns


def test_threads_variable_is_checked():
    code, out = run_python("""
        import tandem
        try:
            tandem.read_csv("/proc/sys/kernel/ostype")
        except ValueError as e:
            print("ValueError", e)
        """, env={"TANDEM_THREADS": "100000"})
    assert code == 0, out
    assert "ValueError TANDEM_THREADS: must be an integer from 1 to 4096" in out, out


def test_threads_argument_is_range_checked():
    with pytest.raises(ValueError, match="from 1 to 4096"):
        tandem.groupby({"k": np.array([1, 2])}, "k", threads=100000)


# ---- CSV from inputs whose size says nothing ---------------------------------------------------------------
def test_read_csv_of_proc_file_and_fifo(tmp_path):
    t = tandem.read_csv("/proc/sys/kernel/ostype")  # st_size 0, content "Linux\n": one column, no rows
    assert list(t.columns) == ["Linux"] and len(t) == 0
    fifo = tmp_path / "in.csv"
    os.mkfifo(fifo)
    pid = os.fork()
    if pid == 0:
        with open(fifo, "w") as f:
            f.write("k,v\na,1\nb,2\n")
        os._exit(0)
    t = tandem.read_csv(fifo)
    os.waitpid(pid, 0)
    assert list(t["v"]) == [1, 2]


def test_huge_float_is_an_error_not_text(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("k,v\na,10\nb,9\nc,1e309\n")
    with pytest.raises(tandem.InputError, match=r"h.csv:4: column 2 \('v'\): '1e309' is beyond the range of f64"):
        tandem.read_csv(path)
    assert list(tandem.read_csv(path, schema={"v": "str"})["v"]) == ["10", "9", "1e309"]


# ---- column labels ------------------------------------------------------------------------------------------
def test_integer_labels_as_pandas_takes_them():
    df = pd.DataFrame({0: [1, 2, 1], 1: [10, 20, 30]})
    want = df.groupby(0, as_index=False).agg(sum_1=(1, "sum"))
    for by in (0, [0], (0,)):
        got = tandem.groupby(df, by, {1: "sum"})
        assert list(got.columns) == [0, "sum_1"]
        assert list(got[0]) == list(want[0]) and list(got["sum_1"]) == list(want["sum_1"])


def test_duplicated_or_clashing_labels_are_value_errors():
    df = pd.DataFrame([[1, 2, 3], [1, 5, 6]], columns=["k", "v", "v"])
    with pytest.raises(ValueError, match="column 'v' appears 2 times"):
        tandem.groupby(df, "k", {"v": "sum"})
    assert list(tandem.groupby(df, "k", "count()")["count"]) == [2]  # an unread duplicate is no problem
    clash = pd.DataFrame({0: [1, 2], "0": [3, 4]})
    with pytest.raises(ValueError, match="both read as '0'"):
        tandem.groupby(clash, [0, "0"], "count()")


# ---- narrow types keep their dtype -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.float16])
def test_narrow_keys_and_values_keep_their_dtype(dtype):
    df = pd.DataFrame({"k": np.array([1, 0, 1, 1], dtype=dtype), "v": np.array([0, 1, 1, 0], dtype=dtype)})
    got = tandem.groupby(df, "k", {"v": ["min", "max", "first", "last", ("top", 1)]}, device="cpu")
    want = df.groupby("k", as_index=False).agg(min_v=("v", "min"), max_v=("v", "max"), first_v=("v", "first"))
    for name in ("k", "min_v", "max_v", "first_v", "last_v", "top1_v"):
        assert got[name].dtype == np.dtype(dtype), name
    for name in ("k", "min_v", "max_v", "first_v"):
        assert list(got[name]) == list(want[name]), name


# ---- arguments ----------------------------------------------------------------------------------------------
def test_wordcount_top_zero_is_an_error():
    assert len(tandem.wordcount(b"a b a")) == 2
    for top in (0, -1, True):
        with pytest.raises(ValueError, match="top must be a positive integer, or None"):
            tandem.wordcount(b"a b a", top=top)


def test_topk_of_one_dimensional_array_says_so():
    with pytest.raises(ValueError, match="must be 2-D"):
        tandem.topk(np.array([0.5, 0.25, 1.0]), 1)
    ids, _ = tandem.topk(np.array([0.5, 0.25, 1.0])[None, :], 1)
    assert list(ids) == [2]
