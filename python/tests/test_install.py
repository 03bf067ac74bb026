"""The package installs with pip and no network (its build backend needs only the standard
library), and finds libptxgate through PTXGATE_LIBRARY or next to the package."""
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

import ptxgate

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
needs_source = pytest.mark.skipif(not os.path.exists(os.path.join(PACKAGE, "pyproject.toml")),
                                  reason="the package's source is not beside these tests (tests of an installed wheel)")


def _pip():
    """A pip command: this interpreter's, else one on PATH (the package is pure Python)."""
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode == 0:
        return [sys.executable, "-m", "pip"]
    found = shutil.which("pip3") or shutil.which("pip")
    return [found] if found else None


def _copy_source(tmp_path):
    # A copy, so the build leaves nothing in the source tree.
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src, ignore=shutil.ignore_patterns("__pycache__", "tests"))
    return src


@needs_source
@pytest.mark.skipif(_pip() is None, reason="no pip on this machine")
def test_pip_installs_offline_and_the_package_imports(tmp_path):
    target = tmp_path / "site"
    out = subprocess.run(_pip() + ["install", "--no-index", "--no-deps", "--no-cache-dir",
                          "--target", str(target), str(_copy_source(tmp_path))], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    code = "import ptxgate, sys; print(ptxgate.__file__); print(ptxgate.compile.__doc__ is not None)"
    env = dict(os.environ, PYTHONPATH=str(target))
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0].startswith(str(target))


@needs_source
def test_wheel_bundles_the_library_next_to_the_package(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(str(_copy_source(tmp_path)), "_build"))
    import ptxgate_build

    monkeypatch.setenv("PTXGATE_LIBRARY", ptxgate.library_path())
    name = ptxgate_build.build_wheel(str(tmp_path))
    monkeypatch.delenv("PTXGATE_LIBRARY")
    assert "none-any" not in name
    with zipfile.ZipFile(tmp_path / name) as whl:
        names = whl.namelist()
        assert "ptxgate/libptxgate.so" in names and "ptxgate/__init__.py" in names
        extension = os.path.isfile(os.path.join(os.path.dirname(os.path.realpath(ptxgate.library_path())),
                                                "_launch.abi3.so"))
        assert ("ptxgate/_launch.abi3.so" in names) == extension
        whl.extractall(tmp_path / "site")
    # Without PTXGATE_LIBRARY the installed package loads the library beside it.
    env = {k: v for k, v in os.environ.items() if k != "PTXGATE_LIBRARY"}
    env["PYTHONPATH"] = str(tmp_path / "site")
    code = "import ptxgate; from ptxgate import _native; print(ptxgate.library_path()); print(_native.module())"
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == str(tmp_path / "site" / "ptxgate" / "libptxgate.so")
    if extension:  # the bundled extension is the one used, with the bundled library
        assert str(tmp_path / "site" / "ptxgate" / "_launch.abi3.so") in lines[1], run.stdout


def test_a_missing_library_names_where_it_looked(tmp_path):
    env = dict(os.environ, PTXGATE_LIBRARY=str(tmp_path / "nope.so"))
    code = "import ptxgate\ntry:\n    ptxgate.library_path()\nexcept ptxgate.LibraryNotFound as e:\n    print(e)\n"
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=PACKAGE)
    assert "nope.so" in run.stdout and "PTXGATE_LIBRARY" in run.stdout
