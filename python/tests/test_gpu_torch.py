"""GPU tensors through PyTorch: sorted and grouped on the device, on torch's current stream.
Skipped without PyTorch or without a GPU."""
import numpy as np
import pytest

import tandem
from tandem import _tandem

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU"),
              pytest.mark.skipif(not _tandem.cuda_built, reason="this build of tandem has no CUDA")]


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.float32, torch.float64, torch.int16, torch.uint8])
def test_sort_matches_torch(dtype):
    g = torch.Generator(device="cuda").manual_seed(1)
    t = (torch.randn(1 << 20, device="cuda", generator=g) * 100).to(dtype)
    out = tandem.sort(t)
    assert isinstance(out, torch.Tensor) and out.is_cuda and out.dtype == dtype
    assert torch.equal(out, torch.sort(t).values)


def test_argsort_matches_torch_stable():
    t = torch.randint(0, 1000, (1 << 20,), device="cuda", dtype=torch.int32)
    order = tandem.argsort(t)
    assert order.dtype == torch.int64 and order.is_cuda
    assert torch.equal(order, torch.argsort(t, stable=True))


def test_in_place_on_the_current_stream():
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        t = torch.rand(1 << 20, device="cuda")
        expected = torch.sort(t).values
        ptr = t.data_ptr()
        none, report = tandem.sort(t, inplace=True, explain=True)
        assert report.details["stream"] == s.cuda_stream
    s.synchronize()
    assert none is None and t.data_ptr() == ptr and torch.equal(t, expected)


def test_groupby_like_unique():
    keys = torch.randint(0, 1 << 12, (1 << 22,), device="cuda", dtype=torch.int32)
    got = tandem.groupby({"k": keys}, by="k", agg={"k": "size"})
    uniq, counts = torch.unique(keys, return_counts=True)
    assert torch.equal(got["k"], uniq) and torch.equal(got["count"], counts)


def test_groupby_several_keys_on_the_table_engine():
    rng = np.random.default_rng(3)
    host = {"a": rng.integers(0, 20, 5000).astype(np.int64), "b": rng.integers(0, 4, 5000).astype(np.int32),
            "v": rng.random(5000)}
    got = tandem.groupby({k: torch.from_numpy(v).cuda() for k, v in host.items()}, by=["a", "b"],
                         agg="median(v),var(v),top(v,3)")
    want = tandem.groupby(host, by=["a", "b"], agg="median(v),var(v),top(v,3)", device="cpu")
    assert all(isinstance(t, torch.Tensor) and t.is_cuda for t in got.values())
    for name in want:
        w = want[name]
        w = w.to_numpy(dtype=np.float64, na_value=np.nan) if hasattr(w, "to_numpy") else np.asarray(w, dtype=np.float64)
        np.testing.assert_allclose(got[name].cpu().numpy().astype(np.float64), w, rtol=1e-9, equal_nan=True)


def test_host_tensors_are_host_arrays():
    t = torch.tensor([3, 1, 2])
    np.testing.assert_array_equal(tandem.sort(t), [1, 2, 3])
