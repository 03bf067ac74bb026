"""On a GPU, one test per item of the Python runtime: every dtype on PyTorch tensors, CuPy arrays,
DLPack and numpy (results compared element by element), events and stream waits, pinned async
copies, the pool, dependency tracking on and off, graphs (recorded, built, replayed, updated),
tensor maps from a tensor (a TMA load), profiling, device sets, NCCL, and a fault raised at the
launch that caused it. Skipped without a GPU (and under the stand-in driver)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ptxgate
from conftest import gpu_runtime_or_skip

HERE = os.path.dirname(os.path.abspath(__file__))

SMALL = """
@workgroup(256)
@fp(exact)
kernel small(inout h: f16[], in b: bf16[], in c: u8[], out d: i8[], in e: u16[], inout f: i16[], out g: bf16[],
             a: f32, n: u32) {
  let i = global_id.x;
  if (i < n) {
    h[i] = f16(f32(h[i]) * a + f32(b[i]));
    d[i] = i8(c[i]) - i8(7);
    f[i] = f[i] + i16(e[i]);
    g[i] = bf16(f32(b[i]) * a);
  }
}
kernel bump(inout y: f32[], n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = y[i] + 1.0; }
}
kernel axpy(out z: f32[], in x: f32[], in y: f32[], a: f32, n: u32) {
  let i = global_id.x;
  if (i < n) { z[i] = a * x[i] + y[i]; }
}
kernel spin_write(out y: f32[], value: f32, spins: u32, n: u32) {
  let i = global_id.x;
  if (i < n) {
    var v: f32 = 0.0;
    for k in 0..spins { v = v + 1.0; }
    y[i] = value + v - f32(spins);
  }
}
"""


@pytest.fixture(scope="module")
def rt():
    r = gpu_runtime_or_skip()
    yield r
    r.close()


@pytest.fixture(scope="module")
def torch(gpu_torch):
    return gpu_torch


@pytest.fixture(scope="module")
def kernels(rt):
    return {name: rt.compile(SMALL, name) for name in ("small", "bump", "axpy", "spin_write")}


def _small_reference(torch, h, b, c, e, f, a):
    return ((h.float() * a + b.float()).half(), (c.to(torch.int8) - 7), f + e.to(torch.int16),
            (b.float() * a).to(torch.bfloat16))


def test_every_dtype_on_torch_tensors_in_place(rt, torch, kernels):
    n = 100_003
    gen = torch.Generator(device="cuda").manual_seed(5)
    h = torch.randn(n, device="cuda", generator=gen).half()
    b = torch.randn(n, device="cuda", generator=gen).to(torch.bfloat16)
    c = torch.randint(0, 256, (n,), device="cuda", generator=gen, dtype=torch.uint8)
    e = torch.randint(0, 1000, (n,), device="cuda", generator=gen, dtype=torch.int32).to(torch.uint16)
    f = torch.randint(-1000, 1000, (n,), device="cuda", generator=gen, dtype=torch.int16)
    d = torch.empty(n, device="cuda", dtype=torch.int8)
    g = torch.empty(n, device="cuda", dtype=torch.bfloat16)
    want_h, want_d, want_f, want_g = _small_reference(torch, h, b, c, e, f, 1.5)
    kernels["small"][(n + 255) // 256, 256](h, b, c, d, e, f, g, 1.5, n)
    torch.cuda.synchronize()
    assert torch.equal(h, want_h) and torch.equal(d, want_d) and torch.equal(f, want_f) and torch.equal(g, want_g)
    with pytest.raises(ptxgate.Error) as info:  # a bf16 tensor for the f16 parameter, named with both types
        kernels["small"][(n + 255) // 256, 256](b, b, c, d, e, f, g, 1.5, n)
    assert info.value.codes == ["PG3010"] and "an array of bf16 elements for a buffer of f16" in info.value.text


def test_bf16_through_dlpack_and_numpy_host_arrays_of_small_types(rt, torch, kernels):
    n = 4096
    b = torch.randn(n, device="cuda").to(torch.bfloat16)

    class ViaDLPack:  # another library's tensor, seen only through DLPack (bf16: kDLBfloat, 16 bits)
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__()

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    g = torch.empty(n, device="cuda", dtype=torch.bfloat16)
    h = np.random.default_rng(1).standard_normal(n).astype(np.float16)
    c = (np.arange(n) % 256).astype(np.uint8)
    d = np.zeros(n, dtype=np.int8)
    e = np.arange(n, dtype=np.uint16)
    f = np.arange(n, dtype=np.int16)
    h0 = torch.from_numpy(h.copy()).cuda()
    kernels["small"][(n + 255) // 256, 256](h, ViaDLPack(b), c, d, e, f, ViaDLPack(g), np.float32(0.5), n)
    torch.cuda.synchronize()
    want_h, want_d, want_f, want_g = _small_reference(torch, h0, b, torch.from_numpy(c).cuda(),
                                                      torch.from_numpy(e.astype(np.int32)).cuda().to(torch.uint16),
                                                      torch.from_numpy(np.arange(n, dtype=np.int16)).cuda(), 0.5)
    assert np.array_equal(h, want_h.cpu().numpy()) and np.array_equal(d, want_d.cpu().numpy())
    assert np.array_equal(f, want_f.cpu().numpy()) and torch.equal(g, want_g)


def test_cupy_half_arrays_through_cuda_array_interface(rt, kernels):
    cp = pytest.importorskip("cupy")
    n = 1000
    y = cp.arange(n, dtype=cp.float32)
    x = cp.ones(n, dtype=cp.float32)
    z = cp.empty(n, dtype=cp.float32)
    kernels["axpy"][(n + 255) // 256, 256](z, x, y, 2.0, n)
    cp.cuda.Device().synchronize()
    assert cp.array_equal(z, 2 * x + y)
    with pytest.raises(ptxgate.Error) as info:
        kernels["axpy"][(n + 255) // 256, 256](z, x.astype(cp.float16), y, 2.0, n)
    assert info.value.codes == ["PG3010"] and "f16" in info.value.text


def test_events_stream_waits_and_pinned_copies(rt, kernels):
    n = 1 << 20
    s1, s2 = rt.stream(), rt.stream()
    host = rt.pinned(n, "f32")
    host.numpy(for_write=True)[:] = np.arange(n, dtype=np.float32)
    x = rt.empty(n, "f32", stream=s1)
    rt.copy(x, host, stream=s1)
    start = s1.record()
    kernels["bump"][(n + 255) // 256, 256, s1](x, n)
    end = s1.record()
    s2.wait(end)
    back = rt.pinned(n, "f32")
    rt.copy(back, x, stream=s2)
    assert np.array_equal(back.numpy(), np.arange(n, dtype=np.float32) + 1)
    end.synchronize()
    assert end.query() and start.elapsed_ms(end) > 0


def test_dependency_tracking_on_orders_streams_and_off_leaves_it_to_events(torch):
    for tracked in (True, False):
        r = gpu_runtime_or_skip(track_dependencies=tracked)
        k = r.compile(SMALL, "spin_write")
        a = r.compile(SMALL, "axpy")
        n = 1 << 16
        y, z = r.empty(n, "f32"), r.empty(n, "f32")
        s1, s2 = r.stream(), r.stream()
        k[(n + 255) // 256, 256, s1](y, 3.0, 200_000, n)  # a slow writer of y on s1
        if not tracked:
            s2.wait(s1)  # untracked: the program orders its streams itself
        a[(n + 255) // 256, 256, s2](z, y, y, 1.0, n)  # reads y on s2
        s2.synchronize()
        assert np.all(z.numpy() == 6.0), f"track_dependencies={tracked}"
        r.close()


def test_stream_ordered_pool_usage_and_limit():
    r = gpu_runtime_or_skip(stream_ordered=True, pool_limit=1 << 26)
    s = r.stream()
    a = r.empty(1 << 22, "f32", stream=s)
    u = r.pool_usage()
    assert u.live_bytes == 1 << 24 and u.reserved_bytes >= 1 << 24 and u.limit_bytes == 1 << 26
    with pytest.raises(ptxgate.Error) as info:
        r.empty(1 << 24, "f32", stream=s)
    assert info.value.codes == ["PG4021"]
    a.free()
    s.synchronize()
    r.trim_pool(0)
    assert r.pool_usage().live_bytes == 0
    r.close()


def test_graphs_recorded_built_replayed_and_updated(rt, torch, kernels):
    n = 4096
    y = rt.zeros(n, "f32")
    t = torch.zeros(n, device="cuda")
    out = rt.empty(n, "f32")
    g = rt.graph()
    with g:
        for _ in range(10):
            kernels["bump"][(n + 255) // 256, 256](y, n)
        kernels["bump"][(n + 255) // 256, 256](t, n)
    node = g.launch(kernels["axpy"], (n + 255) // 256, [out, y, y, 0.5, n], block=256)
    g.copy(y.view(0, 16), out.view(0, 16))
    x = g.instantiate()
    s = rt.stream()
    for _ in range(3):
        x.replay(s)
    s.synchronize()
    # Each replay: y += 10, t += 1, out = 0.5 y + y, then y[:16] = out[:16].
    want = np.zeros(n, np.float32)
    for _ in range(3):
        want += 10
        o = 1.5 * want
        want[:16] = o[:16]
    assert np.array_equal(y.numpy(), want) and float(t[5]) == 3.0
    x.update(node, (n + 255) // 256, [out, y, y, 2.0, n], block=256)  # a new scalar, validated first
    with pytest.raises(ptxgate.Error) as info:
        x.update(node, 1, [out, y, y, 2.0, n], block=2048)
    assert "PG3102" in info.value.codes
    x.replay(s)
    s.synchronize()
    want += 10
    assert np.array_equal(out.numpy(), 3.0 * want)


TMA = r"""
import sys, torch, ptxgate
rt = ptxgate.Runtime()
k = rt.compile('''
@workgroup(256)
kernel tma_tile(out y: f32[], m: tensor_map, x0: i32, y0: i32) {
  shared bars: u64[1];
  shared tile: f32[1056];
  let pad = ((128 - shared_address(tile, 0) % 128) % 128) / 4;
  if (thread_id.x == 0) {
    mbarrier_init(bars, 0, 1);
    fence_proxy_async();
  }
  barrier();
  if (thread_id.x == 0) {
    mbarrier_arrive_expect_tx(bars, 0, 4096);
    tma_load(tile, pad, m, bars, 0, x0, y0);
  }
  mbarrier_wait(bars, 0, 0);
  for e in 0..4 {
    y[thread_id.x * 4 + e] = tile[pad + thread_id.x * 4 + e];
  }
}
''', "tma_tile")
t = torch.arange(512 * 64, device="cuda", dtype=torch.float32).reshape(512, 64)
m = rt.tensor_map(t, box=(256, 4))
y = torch.empty(1024, device="cuda")
k[1, 256](y, m, 8, 128)
torch.cuda.synchronize()
assert torch.equal(y, t[128:384, 8:12].reshape(-1)), "the tile differs"
try:
    rt.tensor_map(t, box=(256, 3))  # 12 bytes: not a multiple of 16
    sys.exit("an inner box of 12 bytes was encoded")
except ptxgate.Error as e:
    print(m, "|", e.codes)
"""


def test_tensor_map_from_a_torch_tensor_feeds_a_tma_load(rt, torch):
    """In a process of its own (a TMA fault would end the context for the other tests)."""
    out = subprocess.run([sys.executable, "-c", TMA], capture_output=True, text=True, timeout=120,
                         cwd=os.path.dirname(HERE))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "tiled f32" in out.stdout and "PG37" in out.stdout


def test_profiling_summarises_each_kernel():
    r = gpu_runtime_or_skip(profile=True)
    k = r.compile(SMALL, "bump")
    y = r.zeros(1 << 20, "f32")
    for _ in range(5):
        k[(1 << 20) // 256, 256](y, 1 << 20)
    p = r.profile()
    assert len(p.launches) == 5 and p.summary[0].kernel == "bump" and p.summary[0].count == 5
    assert 0 < p.summary[0].min_ms <= p.summary[0].median_ms <= p.summary[0].max_ms
    assert float(y.numpy()[3]) == 5.0
    r.close()


def test_device_set_and_nccl_on_every_local_gpu(torch):
    if os.environ.get("PTXGATE_FAKE_CUDA"):
        pytest.skip("GPU test: the session runs over the stand-in driver")
    listing = ptxgate.devices()
    n = len(listing["devices"])
    assert listing["driver_available"] and n >= 1 and len(listing["peer_access"]) == n
    with ptxgate.DeviceSet() as ds:
        comms = ptxgate.Communicator.init_all(list(ds))
        bufs = [r.to_device(np.full(1000, r.device + 1, np.float32)) for r in ds]
        streams = [r.stream() for r in ds]
        if n > 1:
            with ptxgate.nccl.group():
                for c, b, s in zip(comms, bufs, streams):
                    c.all_reduce(b, stream=s)
        else:
            comms[0].all_reduce(bufs[0], stream=streams[0])
        for c, s in zip(comms, streams):
            c.synchronize(s)
        total = sum(range(1, n + 1))
        assert all(np.all(b.numpy() == total) for b in bufs)
        half = [r.to_device(np.ones(8, np.float32)).numpy() for r in ds]
        assert all(np.all(h == 1) for h in half)
        for c in comms:
            c.free()


def test_nccl_rank_from_a_torch_distributed_store(rt, torch):
    dist = pytest.importorskip("torch.distributed")
    store = dist.HashStore()
    comm = ptxgate.Communicator.from_store(rt, store, 0, 1)
    a = rt.to_device(np.arange(64, dtype=np.float32))
    b = rt.empty(64, "f32")
    comm.all_reduce(a, b, op="sum")
    comm.synchronize()
    assert np.array_equal(b.numpy(), np.arange(64, dtype=np.float32))
    assert repr(comm) == f"Communicator(rank 0 of 1, device {rt.device})"
    comm.free()


FAULT = r"""
import ptxgate
rt = ptxgate.Runtime(checked_launches=True)
k = rt.compile("kernel poke(out y: f32[]) { y[global_id.x] = 1.0; }", "poke")
wild = type("Wild", (), {"__cuda_array_interface__": {"data": (64, False), "shape": (256,), "typestr": "<f4",
                                                      "version": 3}})()
try:
    k[4, 64](wild)
    print("no error at the launch")
except ptxgate.Error as e:
    print("launch:", e.codes[0], "poke" in e.text)
"""


def test_checked_launches_raise_a_fault_at_the_launch_that_caused_it(rt):
    out = subprocess.run([sys.executable, "-c", FAULT], capture_output=True, text=True, timeout=120,
                         cwd=os.path.dirname(HERE))
    assert "launch: PG4050 True" in out.stdout, out.stdout + out.stderr


SCATTER = """
kernel scatter(out y: f32[], in idx: u32[], value: f32, n: u32) {
  let i = global_id.x;
  if (i < n) { y[idx[i]] = value; }
}
"""


def test_checked_mode_stops_an_out_of_bounds_write_and_the_next_launch_is_correct():
    rt = gpu_runtime_or_skip(checked=True)
    k = rt.compile(SCATTER, "scatter", name="scatter.pg")
    n = 256
    y = rt.zeros(n + 16, "f32")
    # The kernel sees the first n elements (an array interface of that shape); 16 more lie after them.
    head = dict(y.__cuda_array_interface__, shape=(n,))
    target = type("Head", (), {"__cuda_array_interface__": head})()
    idx = np.arange(n, dtype=np.uint32)
    idx[77] = n + 3                                  # thread 77 writes past the view's end
    k[1, n](target, rt.to_device(idx), 5.0, n)
    with pytest.raises(ptxgate.Error) as info:
        rt.synchronize()
    e = info.value
    assert e.codes == ["PG3804"], e.text
    d = e.diagnostics[0]
    assert d.file == "scatter.pg" and d.line == 4, e.text
    assert "y[idx[i]]" in d.message and "thread (77, 0, 0) of block (0, 0, 0)" in d.message, e.text
    assert str(n + 3) in d.message and f"{n} elements" in d.message, e.text
    got = y.numpy()
    assert np.all(got[n:] == 0.0), "the stopped write touched memory past the view"
    assert np.all(np.delete(got[:n], 77) == 5.0) and got[77] == 0.0
    # The context is healthy: the next launch runs and is correct.
    k[1, n](target, rt.to_device(np.arange(n, dtype=np.uint32)), 7.0, n)
    rt.synchronize()
    assert np.all(y.numpy()[:n] == 7.0) and np.all(y.numpy()[n:] == 0.0)
    rt.close()
