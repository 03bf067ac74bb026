"""Several GPUs in one process: every device and the peer-access matrix, and a DeviceSet (one
Runtime per device, opened together, with peer access enabled where the topology allows)."""
import ctypes
import json
from typing import Any, Dict, List, Optional, Sequence

from . import _capi
from .diagnostics import check_call


def devices() -> Dict[str, Any]:
    """Every GPU, or why there are none, as ``ptxgate devices --format json`` gives it:
    ``{"driver_available", "devices": [{"ordinal", "total_memory_bytes", "driver_version",
    "profile"}], "peer_access": [[bool]], "diagnostics"}``."""
    text = ctypes.c_void_p()
    check_call(_capi.lib().ptxgate_devices_json, ctypes.byref(text))
    try:
        return json.loads(_capi.lib().ptxgate_text_data(text))
    finally:
        _capi.lib().ptxgate_text_free(text)


class DeviceSet:
    """One Runtime per device (``ordinals`` in rank order; None: every device), opened together,
    with peer access enabled where cuDeviceCanAccessPeer allows it: launches and copies then take
    Buffers of a peer device, and ``Runtime.copy`` moves data between any two. The runtime options
    are Runtime's (``track_dependencies=...``, ``profile=...``)."""

    def __init__(self, ordinals: Optional[Sequence[int]] = None, *, enable_peer_access: bool = True, **options):
        from .runtime import Runtime, _runtime_options

        defaults = dict(track_dependencies=True, cache_dir=None, disk_cache=True, checked=False, checked_launches=False,
                        profile=False, stream_ordered=False, require_explicit_stream=False,
                        pool_limit=0, pool_keep=None, opt_level=3, fp_mode="contract")
        unknown = set(options) - set(defaults)
        if unknown:
            raise TypeError(f"DeviceSet got unknown options {sorted(unknown)}")
        defaults.update(options)
        opts = _runtime_options(0, **defaults)
        ords = list(ordinals or [])
        arr = (ctypes.c_int * max(1, len(ords)))(*ords)
        self._handle = ctypes.c_void_p()
        check_call(_capi.lib().ptxgate_device_set_open, arr, len(ords), ctypes.byref(opts), 1 if enable_peer_access else 0,
                   ctypes.byref(self._handle))
        n = _capi.lib().ptxgate_device_set_size(self._handle)
        self.runtimes: List[Runtime] = [
            Runtime(_handle=ctypes.c_void_p(_capi.lib().ptxgate_device_set_runtime(self._handle, i))) for i in range(n)]

    def __len__(self) -> int:
        return len(self.runtimes)

    def __getitem__(self, i: int):
        return self.runtimes[i]

    def __iter__(self):
        return iter(self.runtimes)

    def peer_enabled(self, i: int, j: int) -> bool:
        """Whether device ``i`` may use device ``j``'s memory (positions in the set)."""
        return bool(_capi.lib().ptxgate_device_set_peer_enabled(self._handle, i, j))

    def close(self) -> None:
        for r in self.runtimes:
            r.close()
        self.runtimes = []
        if self._handle:
            _capi.lib().ptxgate_device_set_free(self._handle)
            self._handle = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return f"DeviceSet(devices {[r.device for r in self.runtimes]})"
