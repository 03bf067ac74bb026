"""pytest set-up: import the package from this source tree, and choose the driver.

With $PTXGATE_FAKE_CUDA (ctest sets it to the build's stand-in libcuda), the whole session runs
over that fake driver: runtime tests run on the CPU, GPU tests skip. Without it, the real driver
is used when there is one (the GPU machine)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FAKE = os.environ.get("PTXGATE_FAKE_CUDA")
if FAKE:
    os.environ["PTXGATE_CUDA_DRIVER"] = FAKE
    if os.environ.get("PTXGATE_FAKE_NCCL"):  # the build's stand-in libnccl (one-rank communicators move data)
        os.environ["PTXGATE_NCCL_LIBRARY"] = os.environ["PTXGATE_FAKE_NCCL"]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")

SAXPY = """@workgroup(256)
kernel saxpy(inout y: f32[], in x: f32[], a: f32, n: u32) {
  let i = global_id.x;
  if (i < n) {
    y[i] = a * x[i] + y[i];
  }
}
"""


@pytest.fixture
def saxpy_source():
    return SAXPY


@pytest.fixture
def examples():
    return EXAMPLES


def gpu_runtime_or_skip(**options):
    """A Runtime on the real GPU, or a skip that says why (the stand-in driver, no device)."""
    import ptxgate

    if FAKE:
        pytest.skip("GPU test: the session runs over the stand-in driver")
    try:
        return ptxgate.Runtime(**options)
    except ptxgate.Error as e:
        pytest.skip(f"GPU test: no CUDA device ({e.codes[0]}: {e.diagnostics[0].message})")


@pytest.fixture(scope="module")
def gpu_torch():
    """PyTorch with a CUDA device, or a skip."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("GPU test: torch sees no CUDA device")
    return torch


def has_ptxas():
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    return os.path.exists(os.path.join(cuda, "bin", "ptxas")) or bool(os.environ.get("PTXGATE_PTXAS"))


@pytest.fixture(autouse=True)
def _no_recorded_parameter_slots():
    """The stand-in records as many argument slots of each launch as the last set_param_sizes
    named; a test starts with none, so a count left by another test never reads past a launch's
    arguments (tests that inspect slots set their kernel's sizes)."""
    if FAKE:
        import ctypes

        ctypes.CDLL(FAKE).ptxgate_fake_set_param_sizes(None, 0)
    yield


@pytest.fixture
def fake_driver():
    """The stand-in libcuda's recorder, or a skip when the session does not run over it."""
    if not FAKE:
        pytest.skip("needs PTXGATE_FAKE_CUDA (the build's stand-in libcuda; ctest sets it)")
    import ctypes

    fake = ctypes.CDLL(FAKE)
    fake.ptxgate_fake_last_param.restype = ctypes.c_uint64
    fake.ptxgate_fake_last_param.argtypes = [ctypes.c_int]
    fake.ptxgate_fake_last_stream.restype = ctypes.c_size_t
    fake.ptxgate_fake_last_block.restype = ctypes.c_uint
    fake.ptxgate_fake_last_block.argtypes = [ctypes.c_int]
    fake.ptxgate_fake_count.argtypes = [ctypes.c_char_p]
    fake.ptxgate_fake_set_param_sizes.argtypes = [ctypes.POINTER(ctypes.c_uint), ctypes.c_int]
    fake.ptxgate_fake_graph_updates.restype = ctypes.c_int

    def set_param_sizes(*sizes):
        arr = (ctypes.c_uint * len(sizes))(*sizes)
        fake.ptxgate_fake_set_param_sizes(arr, len(sizes))

    fake.set_param_sizes = set_param_sizes
    return fake
