"""Every ctypes mirror of a C API struct (ptxgate/_capi.py) has the C struct's size, and each of its
fields the C field's offset and size, as the C compiler lays them out: tests/capi/struct_layout.c
prints the layout ($PTXGATE_CAPI_LAYOUT, set by ctest)."""
import ctypes
import json
import os
import subprocess

import pytest

from ptxgate import _capi

# The C struct each mirror stands for.
MIRRORS = {
    "Diagnostic": "ptxgate_diagnostic",
    "CompileOptions": "ptxgate_compile_options",
    "CheckRequest": "ptxgate_check_request",
    "RuntimeOptions": "ptxgate_runtime_options",
    "Arg": "ptxgate_arg",
    "LaunchConfig": "ptxgate_launch_config",
    "CopyEnd": "ptxgate_copy_end",
    "PoolUsage": "ptxgate_pool_usage",
    "TensorMapDesc": "ptxgate_tensor_map_desc",
    "CollectiveEnd": "ptxgate_collective_end",
    "Collective": "ptxgate_collective",
}


@pytest.fixture(scope="module")
def c_layout():
    program = os.environ.get("PTXGATE_CAPI_LAYOUT")
    if not program:
        pytest.skip("PTXGATE_CAPI_LAYOUT (the build's ptxgate_capi_struct_layout) is not set; ctest sets it")
    # Under the sanitizer suite ctest preloads the shared ASan runtime for Python; the layout program
    # carries its own (statically linked by clang) and aborts beside a preloaded one: not for it.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    return json.loads(subprocess.run([program], check=True, capture_output=True, text=True, env=env).stdout)


def structures():
    return {name: cls for name, cls in vars(_capi).items()
            if isinstance(cls, type) and issubclass(cls, ctypes.Structure) and cls.__module__ == _capi.__name__}


def test_every_mirror_is_known_and_every_c_struct_mirrored(c_layout):
    assert set(structures()) == set(MIRRORS), "a ctypes Structure in _capi.py without its C struct in MIRRORS, or the reverse"
    assert set(c_layout) == set(MIRRORS.values())


@pytest.mark.parametrize("mirror", sorted(MIRRORS))
def test_the_mirror_has_the_c_layout(c_layout, mirror):
    cls = structures()[mirror]
    c = c_layout[MIRRORS[mirror]]
    names = [name for name, _ in cls._fields_]
    assert names == list(c["fields"]), f"{mirror}: fields {names}, C has {list(c['fields'])}"
    for name in names:
        descriptor = getattr(cls, name)
        assert [descriptor.offset, descriptor.size] == c["fields"][name], f"{mirror}.{name} (offset, size)"
    assert ctypes.sizeof(cls) == c["size"], f"sizeof {MIRRORS[mirror]}"

