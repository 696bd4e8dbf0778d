"""tandem.wordcount against collections.Counter, tandem.topk against a brute-force answer."""
import collections
import re

import numpy as np
import pandas as pd
import pytest

import tandem
from tandem import _tables

TEXT = "The cat and the hat. THE end; don't stop_here — naïve café, cat!\nthe\tcat"


def counter_of(text_bytes, lowercase=False):
    if lowercase:
        text_bytes = bytes(b + 32 if 65 <= b <= 90 else b for b in text_bytes)
    words = re.findall(rb"[A-Za-z0-9'_\x80-\xff]+", text_bytes)
    c = collections.Counter(words)
    return sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))


def as_pairs(frame):
    return [(w.encode("utf-8", "surrogateescape"), int(c)) for w, c in zip(frame["word"], frame["count"])]


@pytest.mark.parametrize("lowercase", [False, True])
def test_wordcount_bytes(lowercase):
    data = TEXT.encode()
    got = tandem.wordcount(data, lowercase=lowercase)
    assert isinstance(got, pd.DataFrame) and list(got.columns) == ["word", "count"]
    assert as_pairs(got) == counter_of(data, lowercase)


def test_wordcount_buffer_kinds_and_top():
    data = TEXT.encode() * 50
    expected = counter_of(data)[:3]
    for source in (bytearray(data), memoryview(data), np.frombuffer(data, dtype=np.uint8)):
        assert as_pairs(tandem.wordcount(source, top=3)) == expected


def test_wordcount_files(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes(b"one two two")
    b.write_bytes(b"two\xffthree")  # not UTF-8: kept as bytes, shown with surrogate escapes
    got, report = tandem.wordcount([a, str(b)], explain=True)
    assert as_pairs(got) == [(b"two", 2), (b"one", 1), (b"two\xffthree", 1)]
    assert report.details["total_words"] == 4
    assert as_pairs(tandem.wordcount(a)) == [(b"two", 2), (b"one", 1)]


def test_wordcount_without_pandas(monkeypatch):
    monkeypatch.setattr(_tables, "_pandas_module", None)
    got = tandem.wordcount(b"a b a")
    assert list(got["word"]) == ["a", "b"] and list(got["count"]) == [2, 1]


def test_wordcount_errors(tmp_path):
    with pytest.raises(tandem.InputError, match="missing.txt"):
        tandem.wordcount(str(tmp_path / "missing.txt"))
    with pytest.raises(TypeError):
        tandem.wordcount(12)
    with pytest.raises(TypeError, match="uint8"):
        tandem.wordcount(np.zeros(3, dtype=np.int32))
    with pytest.raises(ValueError, match="top"):
        tandem.wordcount(b"a", top=-1)
    assert len(tandem.wordcount(b"")) == 0


def brute_topk(scores, k, agg):
    totals = {"sum": scores.astype(np.float64).sum(axis=0), "min": scores.min(axis=0).astype(np.float64),
              "max": scores.max(axis=0).astype(np.float64)}[agg]
    order = sorted(range(scores.shape[1]), key=lambda j: (-totals[j], j))[:k]
    return np.array(order, dtype=np.uint32), totals[order]


@pytest.mark.parametrize("agg", ["sum", "min", "max"])
def test_topk_score_matrix(agg):
    rng = np.random.default_rng(2)
    scores = (rng.integers(0, 1 << 20, (4, 500)) / float(1 << 20)).astype(np.float32)
    ids, best = tandem.topk(scores, 10, agg=agg)
    expected_ids, expected_scores = brute_topk(scores, 10, agg)
    np.testing.assert_array_equal(ids, expected_ids)
    np.testing.assert_allclose(best, expected_scores, rtol=0, atol=1e-12)
    assert ids.dtype == np.uint32 and best.dtype == np.float64


def test_topk_lists_of_pairs_and_algorithms():
    rng = np.random.default_rng(4)
    scores = rng.random((3, 300)).astype(np.float32)
    pairs = []
    for row in scores:
        order = np.argsort(-row, kind="stable")
        pairs.append((order, row[order]))
    expected = brute_topk(scores, 5, "sum")
    for algo in ("auto", "nra", "ta", "scan"):
        ids, best = tandem.topk(pairs, 5, algo=algo, device="cpu")
        np.testing.assert_array_equal(ids, expected[0])


def test_topk_weighted_and_report():
    scores = np.array([[0.5, 0.25, 0.125], [0.125, 0.5, 0.25]], dtype=np.float32)
    (ids, best), report = tandem.topk(scores, 2, agg="wsum:1,2", explain=True)
    # object 1: 0.25 + 2 * 0.5 = 1.25; object 2: 0.125 + 0.5 = 0.625; object 0: 0.5 + 0.25 = 0.75
    assert list(ids) == [1, 0] and list(best) == [1.25, 0.75]
    assert report.operation


def test_topk_errors(tmp_path):
    scores = np.ones((2, 5), dtype=np.float32)
    with pytest.raises(ValueError, match="k must be"):
        tandem.topk(scores, 0)
    with pytest.raises(tandem.UsageError):
        tandem.topk(scores, 6)  # more than the objects
    with pytest.raises(tandem.UsageError):
        tandem.topk(scores, 1, agg="median")
    unsorted = [(np.array([0, 1]), np.array([0.1, 0.9]))]
    with pytest.raises(tandem.InputError, match="sorted|descending"):
        tandem.topk(unsorted, 1)
    with pytest.raises(ValueError, match="every object"):
        tandem.topk([(np.array([0, 1]), np.array([0.9, 0.1])), (np.array([0]), np.array([0.5]))], 1)
    with pytest.raises(tandem.InputError):
        tandem.topk(str(tmp_path / "none.tkl"), 1)
