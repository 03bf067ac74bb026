"""On a GPU: launches on PyTorch tensors and CuPy arrays in place, compared with the libraries'
own results; numpy arrays copied in and out; foreign streams; refused arguments. Skipped without
a GPU (and under the stand-in driver)."""
import os

import numpy as np
import pytest

import ptxgate
from conftest import gpu_runtime_or_skip

SCALE = """kernel scale(inout y: f32[], a: f32, n: u32) {
  let i = global_id.x;
  if (i < n) {
    y[i] = a * y[i];
  }
}
"""


@pytest.fixture(scope="module")
def runtime():
    rt = gpu_runtime_or_skip()
    yield rt
    rt.close()


@pytest.fixture
def torch(gpu_torch):
    return gpu_torch


def test_numpy_saxpy_copied_in_and_out(runtime, saxpy_source):
    k = runtime.compile(saxpy_source, "saxpy")
    n = 100_000
    y = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    x = np.random.default_rng(2).standard_normal(n).astype(np.float32)
    # saxpy contracts a * x + y into one fma (ptxgate's default, as nvcc's): the reference is the fused
    # result, computed in f64 and rounded once (numpy's f32 2.5 * x + y rounds twice, 1 ulp off at times).
    expected = (2.5 * x.astype(np.float64) + y).astype(np.float32)
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
    assert info.value.codes == ["PG3010"]
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
    expected = (1.5 * x.astype(cp.float64) + y).astype(cp.float32)  # one fma, as the kernel computes it
    s = cp.cuda.Stream(non_blocking=True)
    k.launch((n + 255) // 256, [y, x, 1.5, n], stream=s)
    s.synchronize()
    cp.testing.assert_allclose(y, expected, rtol=1e-6)


def test_triton_ptx_and_cubin_launch_on_torch_tensors(runtime, torch):
    """A kernel Triton compiled, loaded from its PTX and from its cubin, launched by ptxgate on torch
    tensors in place and compared with torch. Triton appends scratch pointers to the signature
    (their number depends on its version); they get a small scratch tensor each."""
    triton = pytest.importorskip("triton")
    import triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    n, block = 100_000, 1024
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    warm = torch.empty_like(x)
    compiled = add_kernel[(triton.cdiv(n, block),)](x, y, warm, n, BLOCK=block)
    torch.cuda.synchronize()
    name = compiled.name if hasattr(compiled, "name") else compiled.metadata.name
    scratch = torch.zeros(1 << 14, dtype=torch.float32, device="cuda")
    for how in ("ptx", "cubin"):
        image = compiled.asm[how]
        k = runtime.load_ptx(image if how == "cubin" else image.encode(), name, name=f"add.{how}")
        params = k.info.params
        assert len(params) >= 4 and params[0].is_buffer and not params[3].is_buffer
        out = torch.zeros_like(x)
        args = [x, y, out, n] + [scratch] * (len(params) - 4)
        k.launch(triton.cdiv(n, block), args, stream=torch.cuda.current_stream())
        torch.cuda.synchronize()
        assert torch.equal(out, x + y), how
        # The kernel's .reqntid (Triton's num_warps * 32) is enforced: another block is refused.
        if k.info.required_block is not None:
            with pytest.raises(ptxgate.Error) as info:
                k.launch(triton.cdiv(n, block), args, block=(k.info.required_block[0] * 2, 1, 1))
            assert "PG3105" in info.value.codes


RESET_SCRIPT = r"""
import numpy as np, ptxgate, sys
rt = ptxgate.Runtime()
poke = rt.compile("kernel poke(out y: f32[]) { y[global_id.x] = 1.0; }", "poke")
wild = type("Wild", (), {"__cuda_array_interface__": {"data": (64, False), "shape": (256,), "typestr": "<f4",
                                                      "version": 3}})()
try:
    poke.launch(4, [wild], block=64)
    rt.synchronize()
    sys.exit("no fault reported")
except ptxgate.Error as e:
    print("fault:", e.codes[0])
try:
    rt.allocate(64)
    sys.exit("the poisoned context still allocates")
except ptxgate.Error as e:
    print("after:", e.codes[0])
try:
    rt.reset()
    print("reset: ok")
except ptxgate.Error as e:
    print("reset:", e.codes[0], "start a new process" in e.text)
try:
    poke.launch(4, [wild], block=64)
    sys.exit("an old kernel launched after the reset")
except ptxgate.Error as e:
    print("old kernel:", e.codes[0])
try:
    k = rt.compile(sys.argv[1], "saxpy")
except ptxgate.Error as e:
    print("compile after the reset:", e.codes[0])
    sys.exit(0)
n = 100_003
y = np.random.default_rng(1).standard_normal(n).astype(np.float32)
x = np.random.default_rng(2).standard_normal(n).astype(np.float32)
expected = (np.float32(2.5) * x.astype(np.float64) + y).astype(np.float32)
k.launch((n + 255) // 256, [y, x, 2.5, n])
print("after reset: max |y - expected| =", float(np.max(np.abs(y - expected))))
"""


def test_a_fault_then_reset_in_one_process(runtime, saxpy_source):
    """In a process of its own (the reset destroys everything in the primary context, PyTorch's memory too):
    a fault, then Runtime.reset: a correct kernel after it where the driver gives a new context, else PG4011."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", RESET_SCRIPT, saxpy_source], capture_output=True, text=True,
                         timeout=120, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert "fault: PG4050" in lines and "after: PG4003" in lines and "old kernel: PG4010" in lines, out.stdout
    if "reset: ok" in lines:  # a driver that gives the process a new context: a correct kernel is exact
        assert "after reset: max |y - expected| = 0.0" in lines, out.stdout
    else:  # the driver keeps the fault for the process (an H100 with driver 580): said, and nothing reused
        assert "reset: PG4011 True" in lines and "compile after the reset: PG4010" in lines, out.stdout
