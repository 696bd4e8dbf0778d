"""tandem.wordcount and tandem.topk."""
import os

import numpy as np

from . import _sort, _tandem
from ._arrays import threads_arg, with_report
from ._tables import _pandas


def _device_arg(device, what):
    if device not in ("auto", "cpu", "gpu"):
        raise ValueError(f"{what}: device must be 'auto', 'cpu' or 'gpu', got {device!r}")
    return device


def wordcount(paths_or_bytes, top=None, *, lowercase=False, device="auto", threads=None, explain=False):
    """Word frequencies (words: runs of ASCII letters, digits, ' and _, and UTF-8 bytes).

    paths_or_bytes: text in memory (bytes, bytearray, memoryview or a uint8 array: used in place),
    a file path (str or os.PathLike), or a list of paths (read one after another; words never join
    across files). A str is a path, never text: pass text as text.encode().
    Returns the words sorted by count (descending), then by their bytes, the `top` most frequent
    only when given: a pandas DataFrame with columns 'word' and 'count', or without pandas a dict
    of two numpy arrays.
    """
    if top is not None and (isinstance(top, bool) or int(top) < 1):  # 0 is no count of words: None asks for all
        raise ValueError(f"wordcount: top must be a positive integer, or None for every word, got {top!r}")
    top = 0 if top is None else int(top)
    device = _device_arg(device, "wordcount")
    threads = threads_arg(threads)
    source = paths_or_bytes
    if isinstance(source, (str, os.PathLike)):
        source = [source]
    if isinstance(source, (list, tuple)):
        if not source or not all(isinstance(p, (str, os.PathLike)) for p in source):
            raise TypeError("wordcount: expected bytes, a path or a non-empty list of paths")
        words, counts, report = _tandem._wordcount_files([os.fspath(p) for p in source], top, bool(lowercase),
                                                                device, threads)
    else:
        if isinstance(source, np.ndarray) and source.dtype != np.uint8:
            raise TypeError(f"wordcount: an array of text must be uint8, got {source.dtype}")
        try:
            view = memoryview(source)
        except TypeError:
            raise TypeError(f"wordcount: expected bytes, a path or a list of paths, got {type(source).__name__}") from None
        words, counts, report = _tandem._wordcount_buffer(view.cast("B") if view.c_contiguous else view, top,
                                                                 bool(lowercase), device, threads)
    pd = _pandas()
    if pd is None:
        result = {"word": words, "count": counts}
    else:
        # object dtype: pandas' Arrow-backed string dtype (the default from pandas 3) cannot hold the
        # surrogate escapes that words which are not UTF-8 carry.
        result = pd.DataFrame({"word": pd.Series(words, dtype=object), "count": counts})
    return with_report(result, report, explain)


def _lists_from_scores(scores):
    """A score matrix (lists x objects) as ranked lists: each row sorted by score, descending
    (ties: the smaller id first)."""
    scores = np.asarray(scores, dtype=np.float32)
    ids = np.empty(scores.shape, dtype=np.uint32)
    ranked = np.empty_like(scores)
    for i, row in enumerate(scores):
        order = _sort.argsort(row, descending=True)
        ids[i] = order
        ranked[i] = row[order]
    return ids, ranked


def topk(lists, k, agg="sum", *, algo="auto", device="auto", threads=None, explain=False):
    """The k best objects under a monotone aggregate of n ranked lists (1 <= n <= 64).

    lists: a TKL1 file path; or a 2-D score matrix (lists x objects; scores[i, j] is object j's
    score in list i); or a sequence of (ids, scores) pairs, one per list, each sorted by score
    descending and naming every object once. Scores are float32 (the lists' format; float64 input
    is rounded to float32). agg: 'sum', 'min', 'max' or 'wsum:w1,w2,...'. algo: 'auto', 'nra',
    'ta' or 'scan'. Returns (ids: uint32 array, scores: float64 array), best first, ties by the
    smaller id.
    """
    k = int(k)
    device = _device_arg(device, "topk")
    threads = threads_arg(threads)
    if k < 1:
        raise ValueError(f"topk: k must be at least 1, got {k}")
    if isinstance(lists, (str, os.PathLike)):
        ids, scores, report = _tandem._topk_file(os.fspath(lists), k, agg, algo, device, threads)
        return with_report((ids, scores), report, explain)
    if isinstance(lists, np.ndarray) and lists.ndim != 2:
        raise ValueError(f"topk: a score matrix must be 2-D (lists x objects), got shape {lists.shape}; one list of "
                         "scores is scores[None, :]")
    if isinstance(lists, np.ndarray):
        id_matrix, score_matrix = _lists_from_scores(lists)
    else:
        pairs = list(lists)
        if not pairs or any(not hasattr(p, "__len__") or len(p) != 2 for p in pairs):
            raise ValueError("topk: expected a path, a 2-D score matrix or a sequence of (ids, scores) pairs")
        lengths = {len(p[0]) for p in pairs} | {len(p[1]) for p in pairs}
        if len(lengths) != 1:
            raise ValueError(f"topk: every list must name every object once; lengths {sorted(lengths)}")
        id_matrix = np.stack([np.asarray(p[0]) for p in pairs])
        if id_matrix.dtype.kind not in "iu":
            raise TypeError(f"topk: ids must be integers, got {id_matrix.dtype}")
        if id_matrix.size and (id_matrix.min() < 0 or id_matrix.max() > np.iinfo(np.uint32).max):
            raise ValueError("topk: ids must be in [0, 2^32)")
        id_matrix = id_matrix.astype(np.uint32)
        score_matrix = np.stack([np.asarray(p[1], dtype=np.float32) for p in pairs])
    ids, scores, report = _tandem._topk_arrays(np.ascontiguousarray(id_matrix), np.ascontiguousarray(score_matrix), k,
                                               agg, algo, device, threads)
    return with_report((ids, scores), report, explain)
