"""The whole runtime from Python over the build's stand-in libcuda (host-backed memory: copies,
fills and one-rank collectives really move data; kernels do not run): every dtype through every
binding, the short launch form, streams and events, pinned copies, the pool, profiling, graphs
(built, recorded, replayed, updated), tensor maps, several devices, NCCL, and the errors each
raises at the call that caused it."""
import struct

import numpy as np
import pytest

import ptxgate
from ptxgate import dtypes as dt

HALVES = """
@workgroup(64)
kernel halves(inout h: f16[], in b: bf16[], in c: u8[], out d: i8[], in e: u16[], inout f: i16[], a: f32, n: u32) {
  let i = global_id.x;
  if (i < n) {
    h[i] = f16(f32(h[i]) * a + f32(b[i]));
    d[i] = i8(c[i]);
    f[i] = f[i] + i16(e[i]);
  }
}
kernel scale(inout y: f32[], a: f32, n: u32) {
  let i = global_id.x;
  if (i < n) { y[i] = y[i] * a; }
}
@workgroup(128)
kernel tma(out y: f32[], m: tensor_map, n: u32) {
  if (global_id.x < n) { y[global_id.x] = 1.0; }
}
"""


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


@pytest.fixture
def rt(fake_driver):
    r = ptxgate.Runtime(disk_cache=False)
    yield r
    r.close()


@pytest.fixture
def halves(rt):
    return rt.compile(HALVES, "halves")


def buffers(rt):
    return [rt.empty(100, t) for t in ("f16", "bf16", "u8", "i8", "u16", "i16")]


def test_every_small_type_binds_through_buffers_and_the_short_form(rt, fake_driver, halves):
    bufs = buffers(rt)
    fake_driver.set_param_sizes(8, 8, 8, 8, 8, 8, 4, 4)
    before = fake_driver.ptxgate_fake_launches()
    halves[2, 64](*bufs, 0.1, 100)
    assert fake_driver.ptxgate_fake_launches() == before + 1
    assert fake_driver.ptxgate_fake_last_param(1) == bufs[1].device_pointer
    assert fake_driver.ptxgate_fake_last_param(6) == f32_bits(0.1)  # the float rounded to the f32 parameter
    assert fake_driver.ptxgate_fake_last_param(7) == 100
    halves[2](*bufs, 2, 100)  # block from @workgroup; an int for the f32 parameter is that number
    assert fake_driver.ptxgate_fake_last_block(0) == 64
    assert fake_driver.ptxgate_fake_last_param(6) == f32_bits(2.0)
    assert "halves[grid=(2,1,1), block=(64,1,1)" in repr(halves[2, 64])


def test_a_bf16_tensor_for_an_f16_parameter_names_both_types(rt, fake_driver, halves):
    bufs = buffers(rt)
    before = fake_driver.ptxgate_fake_launches()
    wrong = [rt.empty(100, "bf16")] + bufs[1:]
    with pytest.raises(ptxgate.Error) as info:
        halves[2, 64](*wrong, 0.1, 100)
    assert info.value.codes == ["PG3006"]
    assert "an array of bf16 elements for a buffer of f16" in info.value.text
    # The same through DLPack (a torch bf16 tensor's way), and numpy arrays of every small type.
    from test_arrays import FakeDLPack

    dl = FakeDLPack(bufs[0].device_pointer, (100,), 4, 16, device=0)
    with pytest.raises(ptxgate.Error) as info:
        halves[2, 64](dl, *bufs[1:], 0.1, 100)
    assert info.value.codes == ["PG3006"] and "an array of bf16 elements for a buffer of f16" in info.value.text
    hosts = [np.zeros(100, t) for t in (np.float16, np.uint16, np.uint8, np.int8, np.uint16, np.int16)]
    with pytest.raises(ptxgate.Error) as info:  # u16 bits for the bf16 parameter: numpy has no bf16
        halves[2, 64](*hosts, 0.1, 100)
    assert info.value.codes == ["PG3006"] and "an array of u16 elements for a buffer of bf16" in info.value.text
    with pytest.raises(ptxgate.Error) as info:
        halves[2, 64](*bufs, 1e39, 100)  # beyond f32
    assert info.value.codes == ["PG3007"] and "within the range of f32" in info.value.text
    with pytest.raises(ptxgate.Error) as info:
        halves[2, 64](*bufs, 0.1, -1)
    assert info.value.codes == ["PG3007"]
    with pytest.raises(ptxgate.Error) as info:
        halves[2, 64](*bufs, np.float16(1.0), 100)  # numpy scalars keep their type
    assert info.value.codes == ["PG3007"] and "f16 scalar" in info.value.text
    assert fake_driver.ptxgate_fake_launches() == before


def test_numpy_arrays_of_small_types_are_copied_in_and_out(rt, fake_driver, halves):
    h = np.arange(100, dtype=np.float16)
    f = np.arange(100, dtype=np.int16)
    args = [h, rt.empty(100, "bf16"), np.ones(100, np.uint8), np.zeros(100, np.int8), np.ones(100, np.uint16), f]
    downloads = fake_driver.ptxgate_fake_count(b"cuMemcpyDtoH")
    halves[2, 64](*args, 1.0, 100)
    # h, d and f are written: copied back (the fake runs no kernel: the values round-trip).
    assert fake_driver.ptxgate_fake_count(b"cuMemcpyDtoH") == downloads + 3
    assert np.array_equal(h, np.arange(100, dtype=np.float16)) and np.array_equal(f, np.arange(100, dtype=np.int16))


def test_buffers_are_typed_shaped_and_round_trip(rt):
    b = rt.to_device(np.arange(12, dtype=np.int16).reshape(3, 4))
    assert b.dtype == "i16" and b.shape == (3, 4) and b.nbytes == 24
    assert np.array_equal(b.numpy(), np.arange(12, dtype=np.int16).reshape(3, 4))
    assert b.__cuda_array_interface__["typestr"] == "<i2"
    assert repr(b) == "Buffer(i16[3x4], device 0, 24 bytes)"
    h = rt.empty(4, "f16")
    h.fill(1.5)
    assert h.numpy().tolist() == [1.5] * 4
    bf = rt.empty(3, "bf16")
    bf.fill(-3.0)
    assert bf.numpy().view(np.uint16).tolist() == [0xC040] * 3
    with pytest.raises(AttributeError):
        bf.__cuda_array_interface__  # noqa: B018 - bf16 has no typestr
    with pytest.raises(ptxgate.Error) as info:
        h.fill(70000.0)  # beyond f16
    assert "beyond the range of f16" in info.value.text


def test_streams_events_and_pinned_copies(rt, fake_driver):
    s1, s2 = rt.stream(), rt.stream()
    pinned = rt.pinned(256, "f32")
    pinned.numpy(for_write=True)[:] = np.arange(256, dtype=np.float32)
    dev = rt.empty(256, "f32")
    rt.copy(dev, pinned, stream=s1)
    assert fake_driver.ptxgate_fake_count(b"cuMemcpyHtoDAsync") >= 1
    back = rt.pinned(256, "f32")
    waits = fake_driver.ptxgate_fake_count(b"cuStreamWaitEvent")
    rt.copy(back, dev, stream=s2)  # tracking orders the read on s2 after the write on s1
    assert fake_driver.ptxgate_fake_count(b"cuStreamWaitEvent") > waits
    assert np.array_equal(back.numpy(), np.arange(256, dtype=np.float32))
    e = s1.record()
    s2.wait(e)
    s2.wait(s1)
    assert e.query() is True
    e2 = rt.event().record(s1)
    assert e.elapsed_ms(e2) == 0.5  # the stand-in's answer
    rt.copy(dev.view(0, 128), dev.view(128, 128), stream=s1)
    assert np.array_equal(dev.numpy()[:128], np.arange(128, 256, dtype=np.float32))
    with pytest.raises(ptxgate.Error) as info:
        rt.copy(dev.view(200, 100), pinned)  # past the buffer's end, and 100 elements against 256
    assert info.value.codes == ["PG4006", "PG4007"]
    with pytest.raises(ptxgate.Error) as info:
        rt.copy(rt.empty(256, "i32"), pinned)  # f32 elements into an i32 buffer
    assert info.value.codes == ["PG4009"] and "f32" in info.value.text and "i32" in info.value.text
    with s1:
        k = rt.compile(HALVES, "scale")
        k[1, 64](dev, 2.0, 64)
        assert fake_driver.ptxgate_fake_last_stream() == s1.handle
    k[1, 64](dev, 2.0, 64)
    assert fake_driver.ptxgate_fake_last_stream() == 0
    assert repr(s1).startswith("Stream(0x") and "owned" in repr(s1)


def test_explicit_streams_only(fake_driver):
    rt = ptxgate.Runtime(disk_cache=False, require_explicit_stream=True)
    k = rt.compile(HALVES, "scale")
    y = rt.empty(64, "f32", stream=rt.stream())
    with pytest.raises(ptxgate.Error) as info:
        k[1, 64](y, 2.0, 64)
    # The one error; a grid of one block on the stand-in's 132 SMs also warns (PG3502).
    assert [d.code for d in info.value.diagnostics if d.severity == "error"] == ["PG3002"]
    k[1, 64, rt.stream()](y, 2.0, 64)
    assert "require_explicit_stream" in repr(rt)
    rt.close()


def test_the_pool_allocates_on_streams_within_its_limit(fake_driver):
    rt = ptxgate.Runtime(disk_cache=False, stream_ordered=True, pool_limit=8192)
    s = rt.stream()
    a = rt.empty(1024, "f32", stream=s)
    u = rt.pool_usage()
    assert u.live_bytes == 4096 and u.allocations == 1 and u.limit_bytes == 8192
    with pytest.raises(ptxgate.Error) as info:
        rt.empty(2048, "f32", stream=s)
    assert info.value.codes == ["PG4021"]
    a.free()
    assert rt.pool_usage().live_bytes == 0 and rt.pool_usage().live_peak_bytes == 4096
    rt.trim_pool()
    rt.reset_pool_peaks()
    assert rt.pool_usage().live_peak_bytes == 0
    rt.close()


def test_profiled_launches_are_summarised(fake_driver):
    rt = ptxgate.Runtime(disk_cache=False, profile=True)
    k = rt.compile(HALVES, "scale")
    y = rt.empty(64, "f32")
    for _ in range(3):
        k[1, 64](y, 2.0, 64)
    p = rt.profile(clear=True)
    assert len(p.launches) == 3 and p.summary[0].kernel == "scale" and p.summary[0].count == 3
    assert "scale" in str(p)
    assert rt.profile().launches == ()
    rt.close()
    plain = ptxgate.Runtime(disk_cache=False)
    with pytest.raises(ptxgate.Error) as info:
        plain.profile()
    assert "profile_launches" in info.value.text
    plain.close()


def test_graphs_built_recorded_replayed_and_updated_before_the_driver(rt, fake_driver):
    k = rt.compile(HALVES, "scale")
    y, z = rt.empty(1000, "f32"), rt.empty(1000, "f32")
    g = rt.graph()
    n0 = g.launch(k, 4, [y, 2.0, 1000], block=256)
    n1 = g.copy(z, y)
    assert (n0, n1) == (0, 1) and g.dependencies(1) == [0]
    with g:  # recorded, not run
        launches = fake_driver.ptxgate_fake_launches()
        k[4, 256](z, 0.5, 1000)
        rt.fill(y, 0.0)
        assert fake_driver.ptxgate_fake_launches() == launches
    assert len(g) == 4 and g.dependencies(2) == [1] and repr(g).startswith("Graph(4 nodes")
    with pytest.raises(ptxgate.Error) as info:  # blocked as a launch is: the graph stays as it was
        g.launch(k, 4, [y, 2.0, 1000], block=2048)
    assert "PG3102" in info.value.codes and len(g) == 4
    with g, pytest.raises(ptxgate.Error) as info:
        k[4, 256](np.zeros(1000, np.float32), 2.0, 1000)
    assert "graph replays long after" in info.value.text
    x = g.instantiate()
    s = rt.stream()
    x.replay(s)
    x.replay(s)
    with s:
        x.replay()
    x.replay()  # the legacy default stream
    assert x.replays == 4 and fake_driver.ptxgate_fake_count(b"cuGraphLaunch") == 4
    fake_driver.set_param_sizes(8, 4, 4)
    updates = fake_driver.ptxgate_fake_graph_updates()
    x.update(n0, 2, [y, 3.0, 500], block=256)
    assert fake_driver.ptxgate_fake_graph_updates() == updates + 1
    with pytest.raises(ptxgate.Error) as info:
        x.update(n0, 2, [y, 3.0, 500], block=2048)
    assert "PG3102" in info.value.codes
    with pytest.raises(ptxgate.Error) as info:
        x.update(n1, 2, [y, 3.0, 500])
    assert info.value.codes == ["PG4032"]
    with pytest.raises(ptxgate.Error) as info:
        x.update(n0, 2, [rt.empty(10, "f64"), 3.0, 500])
    assert info.value.codes == ["PG3006"]
    assert fake_driver.ptxgate_fake_graph_updates() == updates + 1
    z.free()
    with pytest.raises(ptxgate.Error) as info:
        x.replay(s)
    assert info.value.codes == ["PG4030"]


def test_tensor_maps_from_a_buffer_checked_and_passed(rt, fake_driver):
    a = rt.empty((64, 64), "bf16")
    m = rt.tensor_map(a, box=(64, 64), swizzle="128B")
    assert "bf16" in m.description and "64×64" in m.description
    k = rt.compile(HALVES, "tma")
    y = rt.empty(128, "f32")
    k[1, 128](y, m, 128)
    with pytest.raises(ptxgate.Error) as info:
        rt.tensor_map(a, box=(64, 512))  # an inner box past 256 elements
    assert "PG3706" in info.value.codes
    with pytest.raises(ptxgate.Error) as info:
        rt.tensor_map(a, box=(64, 64), swizzle="129B")
    assert info.value.codes == ["PG5004"]
    with pytest.raises(ptxgate.Error) as info:
        rt.tensor_map(rt.empty((8, 8), "i8"), box=(8, 8))
    assert "dtype='u8'" in info.value.text
    with pytest.raises(ptxgate.Error) as info:
        k[1, 128](y, 7, 128)
    assert info.value.codes == ["PG3712"]


def test_several_devices_with_peer_access(fake_driver):
    info = ptxgate.devices()
    assert info["driver_available"] and len(info["devices"]) == 2
    with ptxgate.DeviceSet() as ds:
        assert len(ds) == 2 and ds.peer_enabled(0, 1) and [r.device for r in ds] == [0, 1]
        a = ds[0].to_device(np.arange(64, dtype=np.float32))
        b = ds[1].empty(64, "f32")
        assert b.device == 1
        ds[0].copy(b, a, stream=ds[0].stream())
        assert np.array_equal(b.numpy(), np.arange(64, dtype=np.float32))
        assert repr(ds) == "DeviceSet(devices [0, 1])"
    with pytest.raises(ptxgate.Error) as info:
        ptxgate.DeviceSet([1, 1])
    assert info.value.codes == ["PG4071"]


def test_nccl_communicators_and_collectives(fake_driver):
    uid = ptxgate.nccl.unique_id()
    assert len(uid) == 256
    with ptxgate.DeviceSet() as ds:
        comms = ptxgate.Communicator.init_all(list(ds))
        assert [c.rank for c in comms] == [0, 1] and comms[1].size == 2 and comms[1].device == 1
        g = ds[0].empty(100, "bf16")
        comms[0].all_reduce(g, op="avg", stream=ds[0].stream())
        with pytest.raises(ptxgate.Error) as info:
            comms[0].all_reduce(g, g.view(0, 50))
        assert "PG4207" in info.value.codes or "PG4209" in info.value.codes
        with pytest.raises(ptxgate.Error) as info:
            comms[0].all_reduce(ds[0].empty(10, "i16"))
        # In place: the send and the receive buffer are each named.
        assert info.value.codes == ["PG4206", "PG4206"]
        assert "send elements are i16" in info.value.text and "receive elements are i16" in info.value.text
        with pytest.raises(ptxgate.Error) as info:
            comms[0].broadcast(g, root=5)
        assert info.value.codes == ["PG4211"]
        with pytest.raises(ptxgate.Error) as info:
            comms[0].all_reduce(g, op="median")
        assert info.value.codes == ["PG4210"]
        s0, s1 = ds[0].stream(), ds[1].stream()
        with ptxgate.nccl.group():
            comms[0].send(g, 1, stream=s0)
            comms[1].recv(ds[1].empty(100, "bf16"), 0, stream=s1)
        comms[0].synchronize(s0)
        assert repr(comms[0]) == "Communicator(rank 0 of 2, device 0)"
        for c in comms:
            c.free()

    class Store:  # torch.distributed's store interface: set and a blocking get
        def __init__(self):
            self.values = {}

        def set(self, key, value):
            self.values[key] = value.encode()

        def get(self, key):
            return self.values[key]

    rt = ptxgate.Runtime(disk_cache=False)
    one = ptxgate.Communicator.from_store(rt, Store(), 0, 1)
    a = rt.to_device(np.arange(16, dtype=np.float32))
    b = rt.empty(16, "f32")
    one.all_reduce(a, b)  # one rank: the sum is its own data (the stand-in NCCL moves it)
    assert np.array_equal(b.numpy(), np.arange(16, dtype=np.float32))
    one.free()
    rt.close()


def test_checked_mode_is_an_option_and_bad_modes_are_refused_at_the_call(fake_driver):
    checked = ptxgate.Runtime(disk_cache=False, checked=True)
    assert checked.info["checked"] is True and "checked" in repr(checked)
    checked.close()
    with pytest.raises(ptxgate.Error) as info:
        ptxgate.Runtime(disk_cache=False, fp_mode="loose")
    assert info.value.codes == ["PG5004"]


def test_reprs_say_what_a_thing_is(rt, halves):
    assert repr(rt) == "Runtime(device 0: Fake H100, sm_90)"
    assert repr(halves).startswith("Kernel(halves(inout h: f16[], in b: bf16[]") and "block=(64, 1, 1)" in repr(halves)
    assert repr(rt.pinned(4, "u8")) == "HostBuffer(u8[4], pinned, 4 bytes)"
    assert repr(rt.event()) == "Event(device 0)"


def test_float_bits_is_the_librarys_rounding():
    assert ptxgate.float_bits(1.00048828125, dt.F16) == 0x3C00
    assert ptxgate.float_bits(1.00390625, dt.BF16) == 0x3F80
    assert ptxgate.float_bits(np.float32(0.1), dt.F32) == f32_bits(0.1)
    assert all(ptxgate.float_bits(float(v), dt.F16) == int(np.float16(v).view(np.uint16))
               for v in np.random.default_rng(3).standard_normal(200) * 1000)


def test_freed_objects_raise_at_their_next_use(rt, halves):
    g = rt.graph()
    x = g.instantiate()
    m = rt.tensor_map(rt.empty((64, 64), "bf16"), box=(64, 64))
    for obj, use, fix in ((g, lambda: len(g), "build a new Graph"), (x, lambda: x.replay(), "instantiate the graph again"),
                          (m, lambda: halves[1, 64](m), "make a new TensorMap")):
        obj.free()
        obj.free()  # a second free is nothing
        with pytest.raises(ptxgate.Error) as info:
            use()
        assert info.value.codes == ["PG5002"] and "was freed" in info.value.text and fix in info.value.text
    assert repr(g) == "Graph(freed)" and repr(x) == "GraphExec(freed)"
