"""A PEP 517 build backend for the ptxgate package that uses only the standard library.

pip can then build and install the package with no network (no setuptools download). The wheel
holds the package and bundles libptxgate: $PTXGATE_LIBRARY when set, else the library of the
checkout's build/ (scripts/build.sh), copied beside __init__.py, with the shared libraries it needs
that are not part of every Linux system (fmt, xxhash, ...: found with ldd) in ptxgate/_libs, which
the package loads first, and the launch extension built beside the library (_launch.abi3.so, the
stable ABI: CPython 3.10 and later; the package launches through ctypes where it does not load). Such a wheel is tagged for this platform; with no library at all (no
build, no PTXGATE_LIBRARY) the wheel is pure Python (py3-none-any) and finds the library at run time.
"""
import base64
import hashlib
import os
import sysconfig
import tarfile
import zipfile

import subprocess

NAME = "ptxgate"
VERSION = "0.3.0"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIST_INFO = f"{NAME}-{VERSION}.dist-info"
EXTENSION = "_launch.abi3.so"

METADATA = f"""Metadata-Version: 2.1
Name: {NAME}
Version: {VERSION}
Summary: Compile, check and launch CUDA kernels through ptxgate's validating runtime
Requires-Python: >=3.9
"""


# Libraries every Linux system has (glibc's, the C++ runtime): never bundled.
_SYSTEM = ("libc.so", "libm.so", "libdl.so", "libpthread.so", "librt.so", "ld-linux", "libstdc++.so", "libgcc_s.so",
           "linux-vdso")


def _package_files():
    root = os.path.join(HERE, NAME)
    for name in sorted(os.listdir(root)):
        if name.endswith(".py") or name == "py.typed":
            yield os.path.join(root, name), f"{NAME}/{name}"


def _bundled_library():
    path = os.environ.get("PTXGATE_LIBRARY")
    if path:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"PTXGATE_LIBRARY={path} is not a file")
        return os.path.realpath(path)
    built = os.path.join(os.path.dirname(HERE), "build", "libptxgate.so")
    return os.path.realpath(built) if os.path.isfile(built) else None


def _extension(library):
    """The launch extension the build placed beside ``library`` (python/CMakeLists.txt), or None."""
    path = os.path.join(os.path.dirname(library), EXTENSION)
    return path if os.path.isfile(path) else None


def _dependencies(library):
    """The shared libraries `library` needs beyond the system's, as ldd resolves them here."""
    try:
        out = subprocess.run(["ldd", library], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    found = []
    for line in out.splitlines():
        parts = line.split("=>")
        if len(parts) != 2:
            continue
        target = parts[1].split("(")[0].strip()
        if target and os.path.isfile(target) and not any(os.path.basename(target).startswith(s) for s in _SYSTEM):
            found.append((parts[0].strip(), target))
    return found


def _tag():
    if _bundled_library() is None:
        return "py3-none-any"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"py3-none-{platform}"


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _metadata_files():
    wheel = f"Wheel-Version: 1.0\nGenerator: ptxgate_build\nRoot-Is-Purelib: {'false' if _bundled_library() else 'true'}\nTag: {_tag()}\n"
    return {f"{DIST_INFO}/METADATA": METADATA.encode(), f"{DIST_INFO}/WHEEL": wheel.encode()}


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    target = os.path.join(metadata_directory, DIST_INFO)
    os.makedirs(target, exist_ok=True)
    for arcname, data in _metadata_files().items():
        with open(os.path.join(metadata_directory, arcname), "wb") as f:
            f.write(data)
    return DIST_INFO


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    filename = f"{NAME}-{VERSION}-{_tag()}.whl"
    entries = []
    for path, arcname in _package_files():
        with open(path, "rb") as f:
            entries.append((arcname, f.read()))
    library = _bundled_library()
    if library is not None:
        with open(library, "rb") as f:
            entries.append((f"{NAME}/libptxgate.so", f.read()))
        extension = _extension(library)
        if extension is not None:
            with open(extension, "rb") as f:
                entries.append((f"{NAME}/{EXTENSION}", f.read()))
        for soname, path in _dependencies(library):
            with open(path, "rb") as f:
                entries.append((f"{NAME}/_libs/{soname}", f.read()))
    entries.extend(_metadata_files().items())
    record = [_record_line(arcname, data) for arcname, data in entries]
    record.append(f"{DIST_INFO}/RECORD,,")
    entries.append((f"{DIST_INFO}/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as wheel:
        for arcname, data in entries:
            info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            shared = ".so" in os.path.basename(arcname)
            info.external_attr = (0o755 if shared else 0o644) << 16
            wheel.writestr(info, data, zipfile.ZIP_DEFLATED)
    return filename


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{VERSION}"
    filename = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as tar:
        for rel in ["pyproject.toml", "README.md", "_build/ptxgate_build.py"]:
            path = os.path.join(HERE, rel)
            if os.path.exists(path):
                tar.add(path, arcname=f"{base}/{rel}")
        for path, arcname in _package_files():
            tar.add(path, arcname=f"{base}/{arcname}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = METADATA.encode()
        info.size = len(data)
        import io

        tar.addfile(info, io.BytesIO(data))
    return filename
