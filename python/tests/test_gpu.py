"""On a GPU: launches on PyTorch tensors and CuPy arrays in place, compared with the libraries'
own results; numpy arrays copied in and out; foreign streams; refused arguments. Skipped without
a GPU (and under the stand-in driver)."""
import os

import numpy as np
import pytest

import ptxgate

SCALE = """kernel scale(inout y: f32[], a: f32, n: u32) {
  let i = global_id.x;
  if (i < n) {
    y[i] = a * y[i];
  }
}
"""


def _runtime_or_skip():
    if os.environ.get("PTXGATE_FAKE_CUDA"):
        pytest.skip("GPU test: the session runs over the stand-in driver")
    try:
        return ptxgate.Runtime()
    except ptxgate.Error as e:
        pytest.skip(f"GPU test: no CUDA device ({e.codes[0]}: {e.diagnostics[0].message})")


@pytest.fixture(scope="module")
def runtime():
    rt = _runtime_or_skip()
    yield rt
    rt.close()


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("GPU test: torch sees no CUDA device")
    return torch


def test_numpy_saxpy_copied_in_and_out(runtime, saxpy_source):
    k = runtime.compile(saxpy_source, "saxpy")
    n = 100_000
    y = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    x = np.random.default_rng(2).standard_normal(n).astype(np.float32)
    expected = 2.5 * x + y
    k.launch((n + 255) // 256, [y, x, 2.5, n])
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_torch_tensor_in_place_matches_torch(runtime, saxpy_source, torch):
    k = runtime.compile(saxpy_source, "saxpy")
    n = 1 << 20
    y = torch.randn(n, device="cuda")
    x = torch.randn(n, device="cuda")
    expected = y + 3.0 * x  # by torch
    ptr_before = y.data_ptr()
    k.launch((n + 255) // 256, [y, x, 3.0, n])
    torch.cuda.synchronize()
    assert y.data_ptr() == ptr_before
    torch.testing.assert_close(y, expected)


def test_torch_stream_is_used(runtime, torch):
    k = runtime.compile(SCALE, "scale")
    n = 1 << 16
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y = torch.ones(n, device="cuda")
        k.launch((n + 255) // 256, [y, 4.0, n], stream=s)
        y.mul_(0.5)  # ordered after the launch on the same stream
    s.synchronize()
    torch.testing.assert_close(y, torch.full((n,), 2.0, device="cuda"))


def test_torch_arguments_are_checked_against_the_signature(runtime, saxpy_source, torch):
    k = runtime.compile(saxpy_source, "saxpy")
    n = 1024
    y = torch.zeros(n, device="cuda")
    with pytest.raises(ptxgate.Error) as info:
        k.launch(4, [y, torch.zeros(n, device="cuda", dtype=torch.float64), 1.0, n])
    assert info.value.codes == ["PG3006"]
    with pytest.raises(ptxgate.Error) as info:
        k.launch(4, [y, torch.zeros(2 * n, device="cuda")[::2], 1.0, n])
    assert info.value.codes == ["PG5002"]
    with pytest.raises(ptxgate.Error) as info:
        k.launch(4, [y, torch.zeros(n), 1.0, n])  # a CPU tensor
    assert info.value.codes == ["PG5002"]
    if torch.cuda.device_count() > 1:
        with pytest.raises(ptxgate.Error) as info:
            k.launch(4, [y, torch.zeros(n, device="cuda:1"), 1.0, n])
        assert info.value.codes == ["PG4008"]
    with pytest.raises(ptxgate.Error) as info:
        k.launch(4, [y, y, 1.0, n], block=512)
    assert "PG3105" in info.value.codes


def test_dlpack_only_object(runtime, torch):
    k = runtime.compile(SCALE, "scale")
    n = 4096
    y = torch.ones(n, device="cuda")

    class DLPackOnly:
        def __dlpack__(self, stream=None):
            return y.__dlpack__()

        def __dlpack_device__(self):
            return y.__dlpack_device__()

    k.launch((n + 255) // 256, [DLPackOnly(), 3.0, n])
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.full((n,), 3.0, device="cuda"))


def test_cupy_array_in_place(runtime, saxpy_source):
    cp = pytest.importorskip("cupy")
    k = runtime.compile(saxpy_source, "saxpy")
    n = 1 << 18
    y = cp.random.standard_normal(n, dtype=cp.float32)
    x = cp.random.standard_normal(n, dtype=cp.float32)
    expected = 1.5 * x + y
    s = cp.cuda.Stream(non_blocking=True)
    k.launch((n + 255) // 256, [y, x, 1.5, n], stream=s)
    s.synchronize()
    cp.testing.assert_allclose(y, expected, rtol=1e-6)
