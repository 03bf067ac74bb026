"""ptxgate.compile: PTX, cubin, signatures and resources; program errors as Diagnostic objects."""
import os
import pathlib

import pytest

import ptxgate
from conftest import has_ptxas


def test_api_version_matches_the_library():
    assert ptxgate.API_VERSION == 3
    assert os.path.exists(ptxgate.library_path()) or "libptxgate" in ptxgate.library_path()


def test_compile_text_gives_ptx_and_signatures(saxpy_source):
    m = ptxgate.compile(saxpy_source, target="sm_80", cubin=False, disk_cache=False)
    assert m.target == "sm_80"
    assert ".entry saxpy" in m.ptx and ".target sm_80" in m.ptx
    assert m.cubin == b""
    k = m.kernels["saxpy"]
    assert [p.name for p in k.params] == ["y", "x", "a", "n"]
    assert [p.kind for p in k.params] == ["buffer", "buffer", "scalar", "scalar"]
    assert (k.params[0].type, k.params[0].access, k.params[0].size_bytes) == ("f32", "inout", 8)
    assert (k.params[3].type, k.params[3].access, k.params[3].size_bytes) == ("u32", None, 4)
    assert k.required_block == (256, 1, 1)
    assert k.resources is None


def test_compile_path_and_pathlib(examples):
    path = os.path.join(examples, "block_sum.pg")
    by_str = ptxgate.compile(path, cubin=False, disk_cache=False)
    by_path = ptxgate.compile(pathlib.Path(path), cubin=False, disk_cache=False)
    assert by_str.ptx == by_path.ptx
    assert "block_sum" in by_str.kernels


@pytest.mark.skipif(not has_ptxas(), reason="needs ptxas (the CUDA Toolkit)")
def test_compile_with_cubin_reports_resources(saxpy_source):
    m = ptxgate.compile(saxpy_source, disk_cache=False)
    assert m.cubin[:4] == b"\x7fELF"
    r = m.kernels["saxpy"].resources
    assert r is not None and r.registers_per_thread > 0 and r.spill_store_bytes == 0


def test_program_error_is_raised_with_diagnostics_as_objects_and_text():
    with pytest.raises(ptxgate.Error) as info:
        ptxgate.compile("kernel k(inout y: f32[]) {\n  y[0] = missing;\n}\n", cubin=False, disk_cache=False,
                        name="bad.pg")
    e = info.value
    assert e.codes == ["PG1101"]
    d = e.diagnostics[0]
    assert (d.severity, d.file, d.line, d.column) == ("error", "bad.pg", 2, 10)
    assert "missing" in d.message
    assert "bad.pg:2:10: error[PG1101]" in e.text
    assert "bad.pg:2:10: error[PG1101]" in str(d)


def test_bad_target_and_missing_file():
    with pytest.raises(ptxgate.Error) as info:
        ptxgate.compile("kernel k(inout y: f32[]) { }", target="sm_70", cubin=False, disk_cache=False)
    assert info.value.codes == ["PG2001"]
    with pytest.raises(ptxgate.Error) as info:
        ptxgate.compile(pathlib.Path("/nonexistent/k.pg"), cubin=False, disk_cache=False)
    assert info.value.codes == ["PG5001"]
    with pytest.raises(TypeError):
        ptxgate.compile(42)


def test_read_ptx_reads_a_cubin_with_the_resources_recorded_in_it():
    from conftest import ROOT

    with open(os.path.join(ROOT, "tests", "golden", "ptx", "saxpy_sm80.cubin"), "rb") as f:
        data = f.read()
    m = ptxgate.read_ptx(data, name="saxpy.cubin")
    assert m.target == "sm_80" and m.cubin == data and m.ptx == ""
    k = m.kernels["_Z5saxpyifPKfPf"]
    assert [p.name for p in k.params] == ["param0", "param1", "param2", "param3"]
    assert [p.is_buffer for p in k.params] == [False, False, True, True]
    assert k.resources is not None and k.resources.registers_per_thread == 10
    with pytest.raises(ptxgate.Error) as info:
        ptxgate.read_ptx(data[:100], name="cut.cubin")
    assert info.value.codes == ["PG5001"]


def test_bad_arguments_are_refused_clearly(saxpy_source, tmp_path):
    # A NUL byte would cut the C string short (a cache directory "a\0b" would become "a").
    with pytest.raises(ValueError, match="cache_dir contains a NUL byte"):
        ptxgate.compile(saxpy_source, cubin=False, cache_dir=str(tmp_path / "a\x00b"))
    assert not (tmp_path / "a").exists()
    with pytest.raises(ValueError, match="name contains a NUL byte"):
        ptxgate.compile(saxpy_source, cubin=False, disk_cache=False, name="k\x00.pg")
    for level in (-1, 4, 1.5, True, "3"):
        with pytest.raises(ValueError, match="opt_level must be an int from 0 to 3"):
            ptxgate.compile(saxpy_source, cubin=False, disk_cache=False, opt_level=level)
    # A path that cannot be read is PG5001 naming it, not IsADirectoryError.
    with pytest.raises(ptxgate.Error) as e:
        ptxgate.read_ptx(tmp_path)
    assert e.value.codes == ["PG5001"] and str(tmp_path) in e.value.diagnostics[0].message
    with pytest.raises(ValueError, match="NUL"):
        ptxgate.read_ptx(".version 8.0\n.target sm_90\n", name="a\x00b")


def test_module_format_is_read_not_sniffed():
    lib = ptxgate._capi.lib()
    fmt = lambda b: lib.ptxgate_module_format_of(b, len(b))
    assert fmt(b"// .entry .version\nkernel k() {}") == ptxgate._capi.FORMAT_IR
    assert fmt(b"kernel k() { } // .version 8.0 .entry") == ptxgate._capi.FORMAT_IR
    assert fmt(b"/* a comment */\n  .version 8.0\n.target sm_90\n") == ptxgate._capi.FORMAT_PTX
    assert fmt(b".versionx") == ptxgate._capi.FORMAT_IR
    assert fmt(b"\x7fELF\x02\x01") == ptxgate._capi.FORMAT_CUBIN
    assert fmt(b"\x50\xed\x55\xba\x01\x00") == ptxgate._capi.FORMAT_FATBIN
    assert fmt(b"") == ptxgate._capi.FORMAT_IR
