"""ptxgate.check: the offline verdict of `ptxgate check`, with diagnostics as objects and text."""
import os

import pytest

import ptxgate
from conftest import has_ptxas

pytestmark = pytest.mark.skipif(not has_ptxas(), reason="check asks ptxas for resources (needs the CUDA Toolkit)")


@pytest.fixture
def cache(tmp_path):
    return str(tmp_path / "cache")


def test_blocked_launch_names_each_problem(examples, cache):
    v = ptxgate.check(os.path.join(examples, "saxpy.pg"), "saxpy", grid=100, block=512, shared_bytes=300000,
                      profile="h100-sxm", cache_dir=cache)
    assert v.status == "blocked" and not v.launchable and not v
    assert {"PG3105", "PG3302", "PG3201"} <= set(v.codes)
    pg3201 = next(d for d in v.diagnostics if d.code == "PG3201")
    assert pg3201.line == 4 and pg3201.file.endswith("saxpy.pg") and "232448" in pg3201.message
    assert "error[PG3105]" in v.text and v.text.rstrip().endswith(v.summary)
    assert v.summary.startswith("verdict: status=blocked")
    assert v.json["launchable"] is False


def test_launchable_from_source_text(saxpy_source, cache):
    v = ptxgate.check(saxpy_source, "saxpy", grid=(132, 1), profile="a100-sxm", cache_dir=cache)
    assert v.launchable, v.text
    assert v.json["launchable"] is True


def test_argument_table_and_elements_use_the_cli_grammar(saxpy_source, cache):
    v = ptxgate.check(saxpy_source, "saxpy", grid=4, args={"y": "buffer:400", "x": "buffer:4000", "a": "2.0", "n": "1000"},
                      elements={"y": 1000}, cache_dir=cache)
    assert "PG3008" in v.codes
    v = ptxgate.check(saxpy_source, "saxpy", grid=4, args=["y=buffer:4000", "x=buffer:4000", "a=hello", "n=1000"],
                      cache_dir=cache)
    assert v.status == "error" and v.codes == ["PG5002"]


def test_stops_before_a_verdict(saxpy_source, cache):
    v = ptxgate.check(saxpy_source, "saxpy", grid="ten", cache_dir=cache)
    assert v.status == "usage_error" and v.codes == ["PG5004"] and v.json is None
    v = ptxgate.check(saxpy_source, "nope", cache_dir=cache)
    assert v.status == "error" and v.codes == ["PG2006"]
    v = ptxgate.check(saxpy_source, "saxpy", profile="no-such-gpu", cache_dir=cache)
    assert v.status == "error" and v.codes == ["PG3601"]


def test_cubin_checked_with_its_own_resources_and_a_signature(cache):
    from conftest import ROOT

    cubin = os.path.join(ROOT, "tests", "golden", "ptx", "saxpy_sm80.cubin")
    args = {"param0": "1000", "param1": "2.0", "param2": "random:1000", "param3": "buffer:4000"}
    v = ptxgate.check(cubin, "_Z5saxpyifPKfPf", grid=108, profile="a100-sxm", signature="i32, f32, f32[], f32[]",
                      args=args, cache_dir=cache)
    assert v.launchable, v.text
    too_small = dict(args, param3="buffer:400")
    v = ptxgate.check(cubin, "_Z5saxpyifPKfPf", grid=108, profile="a100-sxm", signature="i32, f32, f32[], f32[]",
                      args=too_small, elements={"param3": 1000}, cache_dir=cache)
    assert v.status == "blocked" and "PG3008" in v.codes
    v = ptxgate.check(cubin, "_Z5saxpyifPKfPf", grid=132, profile="h100-sxm", cache_dir=cache)
    assert v.status == "error" and v.codes == ["PG2001"]
    v = ptxgate.check(cubin, "_Z5saxpyifPKfPf", profile="a100-sxm", signature="i32, f64, f32[], f32[]", cache_dir=cache)
    assert v.status == "error" and v.codes == ["PG3007"]


def test_pg_text_with_ptx_words_in_a_comment_is_pg(saxpy_source, cache):
    # Issue 25 (D16): '.entry' and '.version' in a comment made the text PTX (PG1004).
    v = ptxgate.check("// .entry .version\n" + saxpy_source, "saxpy", grid=132, profile="h100-sxm", cache_dir=cache)
    assert v.launchable, v.text


def test_ptx_text_is_ptx(cache):
    ptx = "// from a compiler\n.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n"
    v = ptxgate.check(ptx, "k", grid=132, profile="h100-sxm", cache_dir=cache)
    assert v.launchable, v.text


def test_bad_arguments_raise_clear_errors(saxpy_source, cache):
    with pytest.raises(TypeError, match="elements must be a dict"):
        ptxgate.check(saxpy_source, "saxpy", elements=[1, 2], cache_dir=cache)
    with pytest.raises(TypeError, match="args must be a dict"):
        ptxgate.check(saxpy_source, "saxpy", args=5, cache_dir=cache)
    with pytest.raises(ValueError, match="NUL"):
        ptxgate.check(saxpy_source, "sax\x00py", cache_dir=cache)
    with pytest.raises(ValueError, match="NUL"):
        ptxgate.check(saxpy_source, "saxpy", args=["y=buffer:4\x00", "x=buffer:4", "a=1.0", "n=1"], cache_dir=cache)


OVER = """@workgroup(256)
kernel over(out y: f32[], n: u32) {
  let i = global_id.x;
  if (i < n) { y[i + 1] = 1.0; }
}
"""


def test_memory_safety_verdicts_are_data(cache):
    v = ptxgate.check(OVER, "over", grid=4, block=256, profile="h100-sxm", args={"y": "fill:1000:0", "n": "1000"},
                      cache_dir=cache)
    assert v.status == "blocked" and "PG3801" in v.codes
    d = next(d for d in v.diagnostics if d.code == "PG3801")
    assert d.line == 4 and "out of bounds" in d.message and "1000" in d.message and "guard the access" in d.fix
    assert "accesses_proven=0/1" in v.summary
    fits = ptxgate.check(OVER, "over", grid=4, block=256, profile="h100-sxm", args={"y": "fill:1001:0", "n": "1000"},
                         cache_dir=cache)
    assert fits.status == "launchable" and "accesses_proven=1/1" in fits.summary
