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


def test_groupby_of_device_tensors_is_refused_clearly():
    keys = torch.randint(0, 1 << 12, (1 << 10,), device="cuda", dtype=torch.int32)
    with pytest.raises(TypeError, match="GPU memory"):
        tandem.groupby({"k": keys}, by="k", agg={"k": "size"})


def test_host_tensors_are_host_arrays():
    t = torch.tensor([3, 1, 2])
    np.testing.assert_array_equal(tandem.sort(t), [1, 2, 3])
