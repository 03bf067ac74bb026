"""NCCL through the validating runtime: communicators of all local GPUs in one process, or one
process per GPU from a unique id the caller passes around (a file, an environment variable,
torch.distributed's store), and the collectives over typed Buffers, each validated before NCCL
sees it (element types, counts, devices, overlap, reduction, root). libnccl.so.2 is found through
$PTXGATE_NCCL_LIBRARY, else the NCCL wheel (nvidia-nccl) beside this package, else the loader."""
import ctypes
import glob
import os
import sys
import threading
from typing import Any, List, Sequence

from . import _capi
from . import dtypes as dt
from ._owned import _Owned
from .diagnostics import Diagnostic, Error, check_call

_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}
ALL_REDUCE, BROADCAST, REDUCE, ALL_GATHER, REDUCE_SCATTER, SEND, RECV = range(7)


def _find_nccl() -> None:
    """Points $PTXGATE_NCCL_LIBRARY at the NCCL of the nvidia-nccl wheel when it is unset and the
    loader would not find libnccl.so.2 on its own (pip puts NCCL in site-packages, off its path)."""
    if os.environ.get("PTXGATE_NCCL_LIBRARY"):
        return
    try:
        ctypes.CDLL("libnccl.so.2")
        return
    except OSError:
        pass
    for entry in sys.path:
        for hit in sorted(glob.glob(os.path.join(entry, "nvidia", "nccl*", "lib", "libnccl.so.2"))):
            os.environ["PTXGATE_NCCL_LIBRARY"] = hit
            return


def unique_id() -> str:
    """A new NCCL unique id as 256 hex digits: made by one process, passed to the others."""
    _find_nccl()
    out = ctypes.create_string_buffer(257)
    check_call(_capi.lib().ptxgate_nccl_unique_id, out)
    return out.value.decode()


def _end(obj, role: str) -> _capi.CollectiveEnd:
    from .memory import Buffer, BufferView

    e = _capi.CollectiveEnd()
    buf = obj.buffer if isinstance(obj, BufferView) else obj
    if not isinstance(buf, Buffer):
        raise Error([Diagnostic("PG5002", "error", f"the {role} of a collective is a {type(obj).__name__}",
                                fix="pass a ptxgate Buffer (or Buffer.view(first, count))")])
    if buf._code == dt.UNKNOWN:
        raise Error([Diagnostic("PG4206", "error", f"the {role} buffer is untyped; a collective needs its element type",
                                fix="allocate it with a dtype (Runtime.empty(shape, dtype))")])
    e.buffer, e.dtype = buf._live(), buf._code
    e.first, e.count = (obj.first, obj.count) if isinstance(obj, BufferView) else (0, buf.size)
    return e


class _GroupState(threading.local):
    group = None


_GROUP = _GroupState()


class Communicator(_Owned):
    """One rank of an NCCL communicator, bound to a Runtime's device. Collectives run on ``stream``
    (None: the current ``with stream:``, else the legacy default stream) through dependency tracking:
    they wait for conflicting work of other streams and later work waits for them. A failed peer
    aborts the communicator (PG4204) instead of hanging ``synchronize``."""

    _free_name = "ptxgate_communicator_free"

    def __init__(self, runtime, nranks: int, rank: int, uid: str, *, _handle=None):
        self._runtime = runtime
        if _handle is not None:
            self._handle = _handle
        else:
            _find_nccl()
            self._handle = ctypes.c_void_p()
            check_call(_capi.lib().ptxgate_communicator_init_rank, runtime._live(), int(nranks), int(rank),
                       uid.encode(), ctypes.byref(self._handle))

    @classmethod
    def init_all(cls, runtimes: Sequence[Any]) -> List["Communicator"]:
        """One communicator per runtime (one per device), all in this process; rank i is runtimes[i]."""
        _find_nccl()
        n = len(runtimes)
        handles = (ctypes.c_void_p * max(1, n))(*[r._live() for r in runtimes])
        out = (ctypes.c_void_p * max(1, n))()
        check_call(_capi.lib().ptxgate_communicator_init_all, handles, n, out)
        return [cls(r, n, i, "", _handle=ctypes.c_void_p(out[i])) for i, r in enumerate(runtimes)]

    @classmethod
    def from_store(cls, runtime, store, rank: int, world_size: int, *, key: str = "ptxgate_nccl_id") -> "Communicator":
        """Rank ``rank`` of ``world_size``, the unique id passed through a key-value store such as
        torch.distributed's (``TCPStore``, ``FileStore``): rank 0 makes it and sets ``key``, every
        other rank waits for it with ``store.get``."""
        if rank == 0:
            uid = unique_id()
            store.set(key, uid)
        else:
            value = store.get(key)
            uid = value.decode() if isinstance(value, (bytes, bytearray)) else str(value)
        return cls(runtime, world_size, rank, uid)

    @property
    def rank(self) -> int:
        return _capi.lib().ptxgate_communicator_rank(self._live())

    @property
    def size(self) -> int:
        return _capi.lib().ptxgate_communicator_size(self._live())

    @property
    def device(self) -> int:
        return _capi.lib().ptxgate_communicator_device(self._live())

    def _run(self, kind: int, send, recv, op: str = "sum", root: int = 0, stream: Any = None) -> None:
        if op not in _OPS:
            raise Error([Diagnostic("PG4210", "error", f"reduction {op!r} is not one of {', '.join(_OPS)}",
                                    fix="pass op='sum', 'prod', 'max', 'min' or 'avg'")])
        c = _capi.Collective()
        c.kind, c.op, c.root = kind, _OPS[op], int(root)
        if kind != RECV:
            c.send = _end(send, "send")
        if kind != SEND:
            c.recv = _end(recv, "receive")
        s = self._runtime._stream_of(stream)
        group = _GROUP.group
        if group is not None:
            group._add(self, s, c, (send, recv))
            return
        check_call(_capi.lib().ptxgate_collective_run, self._live(), s._handle if s is not None else None,
                   ctypes.byref(c))

    def all_reduce(self, send, recv=None, *, op: str = "sum", stream: Any = None) -> None:
        """Every rank's ``send`` reduced into every rank's ``recv`` (None: in place)."""
        self._run(ALL_REDUCE, send, send if recv is None else recv, op, 0, stream)

    def broadcast(self, send, recv=None, *, root: int = 0, stream: Any = None) -> None:
        """The root's ``send`` into every rank's ``recv`` (None: in place)."""
        self._run(BROADCAST, send, send if recv is None else recv, "sum", root, stream)

    def reduce(self, send, recv=None, *, root: int = 0, op: str = "sum", stream: Any = None) -> None:
        self._run(REDUCE, send, send if recv is None else recv, op, root, stream)

    def all_gather(self, send, recv, *, stream: Any = None) -> None:
        """Every rank's ``send`` (n elements) into ``recv`` (n x ranks), in rank order."""
        self._run(ALL_GATHER, send, recv, "sum", 0, stream)

    def reduce_scatter(self, send, recv, *, op: str = "sum", stream: Any = None) -> None:
        """``send`` (n x ranks) reduced across ranks; rank r receives block r (n elements)."""
        self._run(REDUCE_SCATTER, send, recv, op, 0, stream)

    def send(self, data, peer: int, *, stream: Any = None) -> None:
        """Point-to-point: inside ``with ptxgate.nccl.group():`` with the matching ``recv``."""
        self._run(SEND, data, None, "sum", peer, stream)

    def recv(self, data, peer: int, *, stream: Any = None) -> None:
        self._run(RECV, None, data, "sum", peer, stream)

    def synchronize(self, stream: Any = None) -> None:
        """Waits for ``stream``, polling NCCL's asynchronous error (a failed peer: PG4204)."""
        s = self._runtime._stream_of(stream)
        check_call(_capi.lib().ptxgate_communicator_synchronize, self._live(), s._handle if s is not None else None)

    def __repr__(self):
        return f"Communicator(rank {self.rank} of {self.size}, device {self.device})" if self._handle \
            else "Communicator(freed)"


class group:
    """``with ptxgate.nccl.group():`` collects the calls made in the block (point-to-point pairs,
    or one collective on several local communicators), each validated when made, and issues them
    together (ncclGroupStart/End) at the end of the block. Grouped calls need streams of their own."""

    def __init__(self):
        self._handle = ctypes.c_void_p()
        check_call(_capi.lib().ptxgate_group_create, ctypes.byref(self._handle))
        self._keep: list = []
        self._outer = None

    def _add(self, comm: Communicator, stream, c: _capi.Collective, keep) -> None:
        check_call(_capi.lib().ptxgate_group_add, self._handle, comm._live(), stream._handle if stream is not None else None,
                   ctypes.byref(c))
        self._keep.append((comm, stream, keep))

    def __enter__(self):
        self._outer, _GROUP.group = _GROUP.group, self
        return self

    def __exit__(self, exc_type, *exc):
        _GROUP.group = self._outer
        try:
            if exc_type is None:
                check_call(_capi.lib().ptxgate_group_end, self._handle)
        finally:
            _capi.lib().ptxgate_group_free(self._handle)
            self._handle = ctypes.c_void_p()
            self._keep.clear()
