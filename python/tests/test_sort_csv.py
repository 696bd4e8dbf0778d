"""tandem.sort_csv against pandas: the file read by pandas.read_csv and sorted by
sort_values(kind="stable") must equal the sorted file read back, sorted in memory and by runs
under a memory limit small enough to make many runs."""
import os

import numpy as np
import pandas as pd
import pytest

import tandem

WORDS = ["a", "ab", "shared long prefix of many bytes: x", "shared long prefix of many bytes: y",
         "shared long prefix of many bytes", "été", "zz", ""]  # "" is missing in a CSV


def write_random_csv(path, rng, n):
    word = np.array(WORDS, dtype=object)[rng.integers(0, len(WORDS), n)]
    whole = rng.integers(-3, 4, n).astype(str).astype(object)
    whole[rng.random(n) < 0.15] = ""
    specials = np.array(["0", "-0", "nan", "1.5", "-2.25", "", "0.1", "1e300"], dtype=object)
    real = specials[rng.integers(0, len(specials), n)]
    pd.DataFrame({"word": word, "whole": whole, "real": real, "row": np.arange(n)}).to_csv(path, index=False)


def pandas_sorted(path, by, ascending, na_position, limit=None):
    got = pd.read_csv(path).sort_values(by, ascending=ascending, na_position=na_position, kind="stable")
    got = got.reset_index(drop=True)
    return got if limit is None else got.head(limit)


SPECS = [("word", True), ("whole", False), ("real", True), ("real", False), (["whole", "word"], [True, False]),
         (["word", "real", "whole"], [False, True, False])]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("na_position", ["last", "first"])
@pytest.mark.parametrize("spec", SPECS)
def test_matches_pandas_in_memory_and_by_runs(tmp_path, seed, na_position, spec):
    rng = np.random.default_rng(seed)
    src, out, temp = tmp_path / "in.csv", tmp_path / "out.csv", tmp_path / "tmp"
    temp.mkdir()
    write_random_csv(src, rng, 300 + 900 * seed)
    by, ascending = spec
    want = pandas_sorted(src, by, ascending, na_position)
    for memory_limit in (None, "8K"):
        rows, report = tandem.sort_csv(src, by, out=out, ascending=ascending, na_position=na_position,
                                       memory_limit=memory_limit, temp_dir=temp, threads=2, explain=True)
        assert rows == len(want)
        assert ("sorted by runs" in report.explain()) == (memory_limit is not None)
        pd.testing.assert_frame_equal(pd.read_csv(out), want)
        assert os.listdir(temp) == []


def test_limit_is_the_first_rows(tmp_path):
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    write_random_csv(src, np.random.default_rng(7), 2000)
    for memory_limit in (None, 16 << 10):
        assert tandem.sort_csv(src, ["real", "word"], out=out, ascending=[False, True], limit=25,
                               memory_limit=memory_limit, temp_dir=tmp_path) == 25
        pd.testing.assert_frame_equal(pd.read_csv(out), pandas_sorted(src, ["real", "word"], [False, True], "last", 25))


def test_header_only_and_one_row(tmp_path):
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_text("a,b\n")
    assert tandem.sort_csv(src, "b", out=out) == 0
    assert out.read_text() == "a,b\n"
    src.write_text("a,b\nx,1\n")
    assert tandem.sort_csv(os.fspath(src), ["b"], out=os.fspath(out), ascending=False) == 1
    assert out.read_text() == "a,b\nx,1\n"


def test_errors_name_the_problem_and_leave_no_output(tmp_path):
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    write_random_csv(src, np.random.default_rng(1), 100)
    with pytest.raises(ValueError, match="nosuch"):
        tandem.sort_csv(src, ["word", "nosuch"], out=out)
    with pytest.raises(ValueError, match="nosuch"):
        tandem.sort_csv(src, "nosuch", out=out, memory_limit="1K", temp_dir=tmp_path)
    assert not out.exists()
    with pytest.raises(ValueError, match="ascending"):
        tandem.sort_csv(src, ["word", "real"], out=out, ascending=[True])
    with pytest.raises(ValueError, match="na_position"):
        tandem.sort_csv(src, "word", out=out, na_position="middle")
    with pytest.raises(ValueError, match="memory_limit"):
        tandem.sort_csv(src, "word", out=out, memory_limit="lots")
    with pytest.raises(ValueError, match="absent.csv"):
        tandem.sort_csv(tmp_path / "absent.csv", "word", out=out)
    assert not out.exists()
    assert sorted(os.listdir(tmp_path)) == ["in.csv"]


def test_memory_limit_sizes():
    from tandem._table_sort import _memory_limit_arg
    assert _memory_limit_arg(None) == 0
    assert _memory_limit_arg(4096) == 4096
    assert _memory_limit_arg("200M") == 200 << 20
    assert _memory_limit_arg("2g") == 2 << 30
    assert _memory_limit_arg("1.5K") == 1536
