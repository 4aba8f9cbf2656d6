"""CUDA kernels that launch the device functions of :mod:`rbdiff.gpu.compile`, and the
per-thread workspaces they slice. No algorithm math lives here: every kernel below only
picks its thread's evaluation and workspace slot and calls kernels from rbdiff/kernels.

Coarse-grained parallelism (one evaluation per thread): ``rnea``, ``crba``, ``aba``,
``minverse``, ``rnea_derivatives``, ``kinematics_derivatives``, the second-order
``rnea_second_order`` (IDSVA-SO) and ``aba_second_order`` (FDSVA-SO), and the three
partitions of ``aba_derivatives`` (Plancher et al. 2021 Alg. 3 and sec. IV-B), all on the
device:

``"split"``             three launches: qdd = ABA(q, v, tau); the RNEA gradient (IDSVA,
                        from scratch) at (q, v, qdd); -Minv dc/du (M^-1 and the
                        product). qdd and dc/du round-trip through global memory.
``"fused"``             two launches: ABA and IDSVA in one (IDSVA reuses ABA's
                        kinematics), then -Minv dc/du.
``"completely_fused"``  one launch: all of Alg. 3, as the CPU runs it
                        (``kernels.aba_derivatives``, which takes M^-1 from ABA's own
                        factorisation); split and fused compute M^-1 afresh in their
                        last launch (``kernels.aba_derivatives.neg_minv_times``).

(In the paper the partitions divide the work between the host and the device; here
every step runs on the device, so they trade launches and global-memory round trips
instead of PCIe transfers.)

Fine-grained parallelism (Alg. 4 style, ``columns`` kernel): a block of
``(evals, threads_per_eval)`` threads; for each evaluation, thread row 0 runs ABA+IDSVA
while thread row 1 runs M^-1 concurrently (independent given q; different warps when
``evals`` is 32), then after a barrier all ``threads_per_eval`` rows share the columns of
-Minv dc/du (``kernels.aba_derivatives.neg_minv_mul_column``).

Workspaces: one preallocated device array per scratch kind, with a slot per evaluation
in flight. Layout ``"interleaved"`` (default) puts the slot axis last, shape
``(rows, width, slots)``, thread b using ``ws[:, :, b]``: neighbouring threads touch
neighbouring addresses, so every workspace load is coalesced. Layout ``"blocked"`` puts it
first, ``(slots, rows, width)``, thread b using ``ws[b]`` (contiguous per thread).
Scratch the kernels view flat (FDSVA-SO's tensors ``T``, reshaped to (nv, nv^2) for the
outer products) is batch-first in both layouts (BATCH_FIRST), and integer scratch (its
dof parents ``lam``) is int64 (INT_SCRATCH). The (nv, nv, nv) tensors of the second-order
kernels make their workspaces O(nv^3) per evaluation; the budget below bounds them.
"""

import os
import threading
import weakref

import numpy as np
from numba import config, cuda

from ..kernels import aba as _aba
from ..kernels import aba_derivatives as _abad
from ..kernels import crba as _crba
from ..kernels import fdsva_so as _fdsva_so
from ..kernels import idsva as _idsva
from ..kernels import idsva_so as _idsva_so
from ..kernels import kinematics_derivatives as _kinematics_derivatives
from ..kernels import minverse as _minverse
from ..kernels import rnea as _rnea
from ..kernels.idsva import IDSVA_WIDTH
from ..kernels.idsva_so import SC_SIZE
from ..kernels.kinematics_derivatives import STATE_WIDTH
from ..kernels.workspace import W_WIDTH
from ..model.layout import MI_IV, MI_NV
from .compile import device

LAYOUTS = ("interleaved", "blocked")
PARTITIONS = ("split", "fused", "completely_fused")
THREADS_PER_BLOCK = 64        # one-evaluation-per-thread kernels
EVALS_PER_BLOCK = 32          # fine-grained kernel: one warp of evaluations per thread row
# ptxas (sm_90) gives the aba_derivatives kernels 255 registers a thread, so a block holds
# at most 256 threads: 32 evaluations x 8 threads each
MAX_THREADS_PER_EVAL = 8
WORKSPACE_FRACTION = 0.25     # of free device memory, for workspaces (see workspace_budget)
INT_SCRATCH = ("lam",)        # scratch names of int64 arrays (the rest has the state's dtype)
BATCH_FIRST = ("T",)          # scratch the kernels reshape: (slots,) + shape in both layouts
NO_FEXT = ("crba", "minverse", "neg_minv", "kinematics_derivatives")   # kernels without fext

_lock = threading.Lock()
_KERNELS = {}
_budget = [None]
# a register cap per thread for every launch kernel (cuda.jit max_registers): more
# threads resident per SM against spills; None: the compiler's choice
_max_registers = [int(os.environ.get("RBDIFF_GPU_MAX_REGISTERS", "0")) or None]


def set_max_registers(n):
    """Cap the registers per thread of the kernels built from now on (None: no cap).
    Also set by the environment variable RBDIFF_GPU_MAX_REGISTERS."""
    if n is not None and not 16 <= int(n) <= 255:
        raise ValueError(f"n: expected 16..255 registers or None, got {n!r}")
    _max_registers[0] = None if n is None else int(n)


def _jit(fn):
    if _max_registers[0] is None or config.ENABLE_CUDASIM:     # the simulator has no
        return cuda.jit(fn)                                     # registers to cap
    return cuda.jit(fn, max_registers=_max_registers[0])


# ---------------------------------------------------------------------------------------
# workspaces


def scratch_shapes(model, kind, threads_per_eval=1):
    """{name: per-evaluation shape} of the scratch arrays a kernel kind slices."""
    n, nv = model.njoints - 1, model.nv     # moving joints
    rows = n + 1 + nv
    ws = (rows, W_WIDTH)
    F = (n + 1, nv, 6)
    if kind in ("rnea", "crba", "aba"):
        return {"ws": ws}
    if kind == "minverse":
        return {"ws": ws, "F": F}
    if kind == "rnea_derivatives":
        return {"ws": (rows, IDSVA_WIDTH)}
    if kind == "rnea_second_order":
        return {"ws": (rows, IDSVA_WIDTH), "sc": (SC_SIZE,)}
    if kind == "aba_second_order":        # in the order fdsva_so takes them
        return {"ws": ws, "sc": (SC_SIZE,), "qdd": (nv,), "lam": (nv,), "Mt": (7, nv, nv),
                "F": F, "T": (5, nv, nv, nv)}
    if kind == "kinematics_derivatives":
        return {"ws": (rows, STATE_WIDTH)}
    if kind == "completely_fused":
        return {"ws": ws, "qdd": (nv,), "S3": (3, nv, nv), "F": F}
    if kind in ("fused", "split"):
        return {"ws": ws, "qdd": (nv,), "D": (3, nv, nv), "F": F, "buf": (1, 2, nv)}
    if kind == "columns":
        return {"ws": ws, "ws2": ws, "qdd": (nv,), "D": (3, nv, nv), "F": F,
                "buf": (threads_per_eval, 2, nv)}
    raise ValueError(kind)


def scratch_array(name, shape, slots, dtype, layout):
    """(shape, dtype) of the pool array holding scratch ``name`` for ``slots`` evaluations:
    slot axis last (interleaved) or first (blocked, and BATCH_FIRST names); int64 for
    INT_SCRATCH names."""
    full = shape + (slots,) if layout == "interleaved" and name not in BATCH_FIRST \
        else (slots,) + shape
    return full, np.dtype(np.int64) if name in INT_SCRATCH else np.dtype(dtype)


def workspace_budget():
    """Bytes of device memory the workspaces of one call may take: WORKSPACE_FRACTION
    of the free memory when first asked (at least 256 MiB), or what
    :func:`set_workspace_budget` set. Larger batches run in chunks. Each kernel kind
    keeps its own pool per model (until :func:`release`), each within the budget."""
    if _budget[0] is None:
        try:
            free = cuda.current_context().get_memory_info()[0]
        except Exception:           # the simulator reports no finite memory
            free = 1 << 32
        free = min(free, 1 << 46)
        _budget[0] = max(256 << 20, int(WORKSPACE_FRACTION * free))
    return _budget[0]


def set_workspace_budget(nbytes):
    """Cap the device memory of one call's workspaces (None: back to the default)."""
    if nbytes is not None and int(nbytes) <= 0:
        raise ValueError(f"nbytes: expected a positive number of bytes, got {nbytes!r}")
    _budget[0] = None if nbytes is None else int(nbytes)


_SIZES = weakref.WeakKeyDictionary()


def slots_per_launch(model, kind, dtype, threads_per_eval=1):
    """Evaluations one launch computes within the workspace budget (>= 1)."""
    sizes = _SIZES.get(model)
    if sizes is None:
        sizes = _SIZES[model] = {}
    key = (kind, threads_per_eval, np.dtype(dtype))
    per = sizes.get(key)
    if per is None:                       # bytes per evaluation
        per = sizes[key] = sum(
            int(np.prod(s)) * scratch_array(name, s, 1, dtype, "blocked")[1].itemsize
            for name, s in scratch_shapes(model, kind, threads_per_eval).items())
    return max(1, workspace_budget() // per)


class _ModelState:
    """A model's arrays on the device and its workspace pools (one per kernel kind,
    dtype and layout), grown on demand and reused by every later call."""

    def __init__(self, model):
        self.mi = cuda.to_device(np.ascontiguousarray(model.mi))
        self.mf = {np.dtype(np.float64): cuda.to_device(np.ascontiguousarray(model.mf)),
                   np.dtype(np.float32): cuda.to_device(np.ascontiguousarray(model.mf32))}
        self.pools = {}
        self.dummy = {}

    def pool(self, model, kind, dtype, layout, slots, cap, threads_per_eval=1):
        """{name: device array} with room for at least ``slots`` evaluations (grown to
        a power of two, at most ``cap``, so that a growing batch reallocates rarely)."""
        key = (kind, np.dtype(dtype), layout, threads_per_eval)
        cur = self.pools.get(key)
        if cur is None or cur[0] < slots:
            self.pools.pop(key, None)       # the old pool goes before the new one comes
            cur = None
            slots = max(slots, min(cap, 1 << (slots - 1).bit_length()))
            shapes = scratch_shapes(model, kind, threads_per_eval)
            arrays = {name: cuda.device_array(*scratch_array(name, s, slots, dtype, layout))
                      for name, s in shapes.items()}
            cur = (slots, arrays)
            self.pools[key] = cur
        return cur[1]

    def no_fext(self, dtype):
        """A placeholder for the fext argument of kernels built without external forces."""
        dtype = np.dtype(dtype)
        if dtype not in self.dummy:
            self.dummy[dtype] = cuda.device_array((1, 1, 6), dtype)
        return self.dummy[dtype]


_STATES = weakref.WeakKeyDictionary()


def model_state(model):
    """The model's device arrays and workspaces (created on first use, per model)."""
    st = _STATES.get(model)
    if st is None:
        with _lock:
            st = _STATES.get(model)
            if st is None:
                st = _STATES[model] = _ModelState(model)
    return st


def release(model=None):
    """Drop the device arrays and workspaces kept for ``model`` (all models: None); the
    memory returns to the device when Numba's deferred deallocations run."""
    with _lock:
        if model is None:
            _STATES.clear()
        else:
            _STATES.pop(model, None)


# ---------------------------------------------------------------------------------------
# kernels: each factory closes over device functions and two compile-time constants,
# FEXT (external forces given) and LAST (interleaved workspace layout); Numba prunes the
# branch not taken.


def _one_per_thread(kernel_fn, FEXT, LAST):
    """rnea / aba: kernel_fn(mi, mf, q, v, u, fext, ws, out) for evaluation b."""
    dev = device(kernel_fn)

    def k(mi, mf, q, v, u, fext, WS, out):
        b = cuda.grid(1)
        if b < q.shape[0]:
            if LAST:
                ws = WS[:, :, b]
            else:
                ws = WS[b]
            if FEXT:
                dev(mi, mf, q[b], v[b], u[b], fext[b], ws, out[b])
            else:
                dev(mi, mf, q[b], v[b], u[b], None, ws, out[b])
    return _jit(k)


def _crba_kernel(FEXT, LAST):
    dev = device(_crba.crba)

    def k(mi, mf, q, WS, out):
        b = cuda.grid(1)
        if b < q.shape[0]:
            if LAST:
                ws = WS[:, :, b]
            else:
                ws = WS[b]
            dev(mi, mf, q[b], ws, out[b])
    return _jit(k)


def _minverse_kernel(FEXT, LAST):
    dev = device(_minverse.minverse)

    def k(mi, mf, q, WS, FF, out):
        b = cuda.grid(1)
        if b < q.shape[0]:
            if LAST:
                ws = WS[:, :, b]
                F = FF[:, :, :, b]
            else:
                ws = WS[b]
                F = FF[b]
            dev(mi, mf, q[b], ws, F, out[b])
    return _jit(k)


def _rnea_derivatives_kernel(FEXT, LAST):
    dev = device(_idsva.idsva)

    def k(mi, mf, q, v, a, fext, WS, d1, d2, d3):
        b = cuda.grid(1)
        if b < q.shape[0]:
            if LAST:
                ws = WS[:, :, b]
            else:
                ws = WS[b]
            if FEXT:
                dev(mi, mf, q[b], v[b], a[b], fext[b], ws, d1[b], d2[b], d3[b])
            else:
                dev(mi, mf, q[b], v[b], a[b], None, ws, d1[b], d2[b], d3[b])
    return _jit(k)


def _rnea_second_order_kernel(FEXT, LAST):
    """IDSVA-SO per thread (kernels.idsva_so): d2tau/dq2, d2tau/dv2, d2tau/dqdv, dM/dq."""
    dev = device(_idsva_so.idsva_so)

    def k(mi, mf, q, v, a, fext, WS, SC, d1, d2, d3, d4):
        b = cuda.grid(1)
        if b < q.shape[0]:
            if LAST:
                ws = WS[:, :, b]
                sc = SC[:, b]
            else:
                ws = WS[b]
                sc = SC[b]
            if FEXT:
                dev(mi, mf, q[b], v[b], a[b], fext[b], ws, sc, d1[b], d2[b], d3[b], d4[b])
            else:
                dev(mi, mf, q[b], v[b], a[b], None, ws, sc, d1[b], d2[b], d3[b], d4[b])
    return _jit(k)


def _aba_second_order_kernel(FEXT, LAST):
    """FDSVA-SO per thread (kernels.fdsva_so): d2qdd/dq2, d2qdd/dv2, d2qdd/dqdv,
    d2qdd/dtaudq. Its tensor scratch T is batch-first in both layouts (BATCH_FIRST)."""
    dev = device(_fdsva_so.fdsva_so)

    def k(mi, mf, q, v, tau, fext, WS, SC, QDD, LAM, MT, FF, TT, d1, d2, d3, d4):
        b = cuda.grid(1)
        if b < q.shape[0]:
            T = TT[b]
            if LAST:
                ws = WS[:, :, b]
                sc = SC[:, b]
                qdd = QDD[:, b]
                lam = LAM[:, b]
                Mt = MT[:, :, :, b]
                F = FF[:, :, :, b]
            else:
                ws = WS[b]
                sc = SC[b]
                qdd = QDD[b]
                lam = LAM[b]
                Mt = MT[b]
                F = FF[b]
            if FEXT:
                dev(mi, mf, q[b], v[b], tau[b], fext[b], ws, sc, qdd, lam, Mt, F, T,
                    d1[b], d2[b], d3[b], d4[b])
            else:
                dev(mi, mf, q[b], v[b], tau[b], None, ws, sc, qdd, lam, Mt, F, T,
                    d1[b], d2[b], d3[b], d4[b])
    return _jit(k)


def _kinematics_derivatives_kernel(FEXT, LAST):
    """Velocity and acceleration derivatives of every joint per thread
    (kernels.kinematics_derivatives)."""
    dev = device(_kinematics_derivatives.kinematics_derivatives)

    def k(mi, mf, q, v, a, reference, WS, d1, d2, d3, d4, d5):
        b = cuda.grid(1)
        if b < q.shape[0]:
            if LAST:
                ws = WS[:, :, b]
            else:
                ws = WS[b]
            dev(mi, mf, q[b], v[b], a[b], reference, ws, d1[b], d2[b], d3[b], d4[b], d5[b])
    return _jit(k)


def _completely_fused_kernel(FEXT, LAST):
    """Alg. 3 in one launch: kernels.aba_derivatives per thread."""
    dev = device(_abad.aba_derivatives)

    def k(mi, mf, q, v, tau, fext, WS, QDD, SS, FF, d1, d2, d3):
        b = cuda.grid(1)
        if b < q.shape[0]:
            if LAST:
                ws = WS[:, :, b]
                qdd = QDD[:, b]
                S3 = SS[:, :, :, b]
                F = FF[:, :, :, b]
            else:
                ws = WS[b]
                qdd = QDD[b]
                S3 = SS[b]
                F = FF[b]
            if FEXT:
                dev(mi, mf, q[b], v[b], tau[b], fext[b], ws, qdd, S3, F, d1[b], d2[b], d3[b])
            else:
                dev(mi, mf, q[b], v[b], tau[b], None, ws, qdd, S3, F, d1[b], d2[b], d3[b])
    return _jit(k)


def _split_aba_kernel(FEXT, LAST):
    """Split step 1: qdd = ABA(q, v, tau) into the slot's qdd."""
    dev = device(_aba.aba)

    def k(mi, mf, q, v, tau, fext, WS, QDD):
        b = cuda.grid(1)
        if b < q.shape[0]:
            if LAST:
                ws = WS[:, :, b]
                qdd = QDD[:, b]
            else:
                ws = WS[b]
                qdd = QDD[b]
            if FEXT:
                dev(mi, mf, q[b], v[b], tau[b], fext[b], ws, qdd)
            else:
                dev(mi, mf, q[b], v[b], tau[b], None, ws, qdd)
    return _jit(k)


def _split_idsva_kernel(FEXT, LAST):
    """Split step 2: the RNEA gradient by IDSVA from scratch at (q, v, qdd) into D."""
    dev = device(_idsva.idsva)

    def k(mi, mf, q, v, fext, WS, QDD, DD):
        b = cuda.grid(1)
        if b < q.shape[0]:
            if LAST:
                ws = WS[:, :, b]
                qdd = QDD[:, b]
                D = DD[:, :, :, b]
            else:
                ws = WS[b]
                qdd = QDD[b]
                D = DD[b]
            if FEXT:
                dev(mi, mf, q[b], v[b], qdd, fext[b], ws, D[0], D[1], D[2])
            else:
                dev(mi, mf, q[b], v[b], qdd, None, ws, D[0], D[1], D[2])
    return _jit(k)


def _fused_kernel(FEXT, LAST):
    """Fused step 1: ABA then IDSVA on ABA's kinematics (id_derivatives_at_fd) into D."""
    dev = device(_abad.id_derivatives_at_fd)

    def k(mi, mf, q, v, tau, fext, WS, QDD, DD):
        b = cuda.grid(1)
        if b < q.shape[0]:
            if LAST:
                ws = WS[:, :, b]
                qdd = QDD[:, b]
                D = DD[:, :, :, b]
            else:
                ws = WS[b]
                qdd = QDD[b]
                D = DD[b]
            if FEXT:
                dev(mi, mf, q[b], v[b], tau[b], fext[b], ws, qdd, D[0], D[1], D[2])
            else:
                dev(mi, mf, q[b], v[b], tau[b], None, ws, qdd, D[0], D[1], D[2])
    return _jit(k)


def _neg_minv_kernel(FEXT, LAST):
    """Last step of split and fused: Minv (into d3) and -Minv D (into d1, d2)."""
    dev = device(_abad.neg_minv_times)

    def k(mi, mf, q, WS, FF, DD, BUF, d1, d2, d3):
        b = cuda.grid(1)
        if b < q.shape[0]:
            if LAST:
                ws = WS[:, :, b]
                F = FF[:, :, :, b]
                D = DD[:, :, :, b]
                buf = BUF[0, :, :, b]
            else:
                ws = WS[b]
                F = FF[b]
                D = DD[b]
                buf = BUF[b, 0]
            dev(mi, mf, q[b], ws, F, D[0], D[1], d1[b], d2[b], d3[b], buf[0], buf[1])
    return _jit(k)


def _columns_kernel(FEXT, LAST):
    """Alg. 3 in one launch with fine-grained parallelism; block (evals, P)."""
    grad = device(_abad.id_derivatives_at_fd)
    minv = device(_minverse.minverse)
    column = device(_abad.neg_minv_mul_column)

    def k(mi, mf, q, v, tau, fext, WS, WS2, QDD, DD, FF, BUF, d1, d2, d3):
        e = cuda.threadIdx.x
        p = cuda.threadIdx.y
        P = cuda.blockDim.y
        b = cuda.blockIdx.x * cuda.blockDim.x + e
        active = b < q.shape[0]
        if not active:
            b = q.shape[0] - 1      # views stay defined; inactive threads only sync
        if LAST:
            ws = WS[:, :, b]
            ws2 = WS2[:, :, b]
            qdd = QDD[:, b]
            D = DD[:, :, :, b]
            F = FF[:, :, :, b]
            buf = BUF[p, :, :, b]
        else:
            ws = WS[b]
            ws2 = WS2[b]
            qdd = QDD[b]
            D = DD[b]
            F = FF[b]
            buf = BUF[b, p]
        if active:
            if p == 0:          # Alg. 3 lines 1-2
                if FEXT:
                    grad(mi, mf, q[b], v[b], tau[b], fext[b], ws, qdd, D[0], D[1], D[2])
                else:
                    grad(mi, mf, q[b], v[b], tau[b], None, ws, qdd, D[0], D[1], D[2])
            if p == 1 % P:      # M^-1, concurrently (row 0 too when P == 1)
                minv(mi, mf, q[b], ws2, F, d3[b])
        cuda.syncthreads()
        if active:              # Alg. 3 line 3, columns j = p, p + P, ...
            n = mi[0, 0]
            for jt in range(1, n + 1):
                iv = mi[jt, MI_IV]
                for j in range(iv, iv + mi[jt, MI_NV]):
                    if j % P == p:
                        column(mi, d3[b], D[0], D[1], d1[b], d2[b], jt, j, buf[0], buf[1])
    return _jit(k)


_FACTORIES = {
    "rnea": lambda FEXT, LAST: _one_per_thread(_rnea.rnea, FEXT, LAST),
    "aba": lambda FEXT, LAST: _one_per_thread(_aba.aba, FEXT, LAST),
    "crba": _crba_kernel,
    "minverse": _minverse_kernel,
    "rnea_derivatives": _rnea_derivatives_kernel,
    "rnea_second_order": _rnea_second_order_kernel,
    "aba_second_order": _aba_second_order_kernel,
    "kinematics_derivatives": _kinematics_derivatives_kernel,
    "completely_fused": _completely_fused_kernel,
    "split_aba": _split_aba_kernel,
    "split_idsva": _split_idsva_kernel,
    "fused": _fused_kernel,
    "neg_minv": _neg_minv_kernel,
    "columns": _columns_kernel,
}


def kernel(name, fext, layout):
    """The launch kernel ``name`` for (external forces given, workspace layout), built
    once per process."""
    key = (name, bool(fext), layout, _max_registers[0])
    k = _KERNELS.get(key)
    if k is None:
        with _lock:
            k = _KERNELS.get(key)
            if k is None:
                k = _KERNELS[key] = _FACTORIES[name](bool(fext), layout == "interleaved")
    return k


def blocks(n, threads=THREADS_PER_BLOCK):
    return (n + threads - 1) // threads


# ---------------------------------------------------------------------------------------
# launchers: inputs and outputs are device arrays with a leading batch axis (already
# validated by dispatch.py); large batches run in chunks that fit the workspace budget.


def _chunks(B, step, *arrays):
    """(start, stop, the arrays sliced to it) for each chunk of at most ``step``
    evaluations; one chunk passes the arrays themselves (slicing a device array costs
    microseconds of Python). None stays None."""
    if B <= step:
        yield 0, B, arrays
        return
    for s in range(0, B, step):
        e = min(B, s + step)
        yield s, e, tuple(None if a is None else a[s:e] for a in arrays)


def launch_dynamics(model, name, q, v, u, fext, out, layout):
    """rnea or aba over the batch: out[b] = f(q[b], v[b], u[b], fext[b])."""
    st = model_state(model)
    dt = np.dtype(q.dtype)
    k = kernel(name, fext is not None, layout)
    step = slots_per_launch(model, name, dt)
    for s, e, (qs, vs, us, f, o) in _chunks(q.shape[0], step, q, v, u, fext, out):
        p = st.pool(model, name, dt, layout, e - s, step)
        f = st.no_fext(dt) if f is None else f
        k[blocks(e - s), THREADS_PER_BLOCK](st.mi, st.mf[dt], qs, vs, us, f, p["ws"], o)


def launch_inertia(model, name, q, out, layout):
    """crba or minverse over the batch: out[b] = f(q[b])."""
    st = model_state(model)
    dt = np.dtype(q.dtype)
    k = kernel(name, False, layout)
    step = slots_per_launch(model, name, dt)
    for s, e, (qs, o) in _chunks(q.shape[0], step, q, out):
        p = st.pool(model, name, dt, layout, e - s, step)
        extra = (p["F"],) if name == "minverse" else ()
        k[blocks(e - s), THREADS_PER_BLOCK](st.mi, st.mf[dt], qs, p["ws"], *extra, o)


def launch_derivatives(model, q, v, u, fext, outs, kind, layout):
    """A derivatives kernel of (q, v, u, fext) over the batch, its scratch in
    scratch_shapes order: "rnea_derivatives" (IDSVA: three (nv, nv) outputs),
    "rnea_second_order" (IDSVA-SO) or "aba_second_order" (FDSVA-SO: four (nv, nv, nv))."""
    st = model_state(model)
    dt = np.dtype(q.dtype)
    k = kernel(kind, fext is not None, layout)
    step = slots_per_launch(model, kind, dt)
    for s, e, (qs, vs, us, f, *os_) in _chunks(q.shape[0], step, q, v, u, fext, *outs):
        p = st.pool(model, kind, dt, layout, e - s, step)
        f = st.no_fext(dt) if f is None else f
        k[blocks(e - s), THREADS_PER_BLOCK](st.mi, st.mf[dt], qs, vs, us, f, *p.values(),
                                            *os_)


def launch_kinematics_derivatives(model, q, v, a, fext, outs, layout, reference):
    """dv_dq, dv_dv, da_dq, da_dv, da_da (each (B, njoints, 6, nv)) into outs; reference:
    kernels.kinematics_derivatives.WORLD, LOCAL or LOCAL_WORLD_ALIGNED; fext: None (the
    launchers' common signature; kinematics take no forces)."""
    st = model_state(model)
    dt = np.dtype(q.dtype)
    k = kernel("kinematics_derivatives", False, layout)
    step = slots_per_launch(model, "kinematics_derivatives", dt)
    for s, e, (qs, vs, As, *os_) in _chunks(q.shape[0], step, q, v, a, *outs):
        p = st.pool(model, "kinematics_derivatives", dt, layout, e - s, step)
        k[blocks(e - s), THREADS_PER_BLOCK](st.mi, st.mf[dt], qs, vs, As, reference,
                                            p["ws"], *os_)


def launch_aba_derivatives(model, q, v, tau, fext, outs, layout, partition,
                           threads_per_eval=1):
    """dqdd_dq, dqdd_dv, dqdd_dtau into outs by the given partition (PARTITIONS), or by
    the fine-grained kernel when threads_per_eval > 1 (completely fused only)."""
    st = model_state(model)
    dt = np.dtype(q.dtype)
    mi, mf = st.mi, st.mf[dt]
    has_f = fext is not None
    kind = "columns" if threads_per_eval > 1 else partition
    step = slots_per_launch(model, kind, dt, threads_per_eval)
    for s, e, (qs, vs, ts, f, d1, d2, d3) in _chunks(q.shape[0], step, q, v, tau, fext,
                                                      *outs):
        n = e - s
        p = st.pool(model, kind, dt, layout, n, step, threads_per_eval)
        f = st.no_fext(dt) if f is None else f
        g, t = blocks(n), THREADS_PER_BLOCK
        if kind == "columns":
            E = EVALS_PER_BLOCK
            kernel("columns", has_f, layout)[blocks(n, E), (E, threads_per_eval)](
                mi, mf, qs, vs, ts, f, p["ws"], p["ws2"], p["qdd"], p["D"], p["F"],
                p["buf"], d1, d2, d3)
        elif kind == "completely_fused":
            kernel("completely_fused", has_f, layout)[g, t](
                mi, mf, qs, vs, ts, f, p["ws"], p["qdd"], p["S3"], p["F"], d1, d2, d3)
        else:
            if kind == "split":
                kernel("split_aba", has_f, layout)[g, t](
                    mi, mf, qs, vs, ts, f, p["ws"], p["qdd"])
                kernel("split_idsva", has_f, layout)[g, t](
                    mi, mf, qs, vs, f, p["ws"], p["qdd"], p["D"])
            else:
                kernel("fused", has_f, layout)[g, t](
                    mi, mf, qs, vs, ts, f, p["ws"], p["qdd"], p["D"])
            kernel("neg_minv", has_f, layout)[g, t](
                mi, mf, qs, p["ws"], p["F"], p["D"], p["buf"], d1, d2, d3)


# ---------------------------------------------------------------------------------------
# compile without a GPU


def _example_args(model, name, dtype, layout, fext, threads_per_eval=2, B=2):
    """Host arrays with the types (dtype, rank, layout) the launcher passes to kernel
    ``name``: numba.typeof of them is the kernel's signature."""
    kind = {"split_aba": "split", "split_idsva": "split", "neg_minv": "split"}.get(name, name)
    shapes = scratch_shapes(model, kind, threads_per_eval)
    p = {k: np.zeros(*scratch_array(k, s, B, dtype, layout)) for k, s in shapes.items()}
    nq, nv, n = model.nq, model.nv, model.njoints
    mi, mf = np.ascontiguousarray(model.mi), np.ascontiguousarray(model.mf, dtype)
    q, v, u = np.zeros((B, nq), dtype), np.zeros((B, nv), dtype), np.zeros((B, nv), dtype)
    f = np.zeros((B, n, 6) if fext else (1, 1, 6), dtype)
    out1, M = np.zeros((B, nv), dtype), np.zeros((B, nv, nv), dtype)
    T3, K = np.zeros((B, nv, nv, nv), dtype), np.zeros((B, n, 6, nv), dtype)
    if name in ("rnea_second_order", "aba_second_order"):
        return (mi, mf, q, v, u, f, *p.values(), T3, T3, T3, T3)
    if name == "kinematics_derivatives":
        return (mi, mf, q, v, u, 0, p["ws"], K, K, K, K, K)
    return {
        "rnea": (mi, mf, q, v, u, f, p.get("ws"), out1),
        "aba": (mi, mf, q, v, u, f, p.get("ws"), out1),
        "crba": (mi, mf, q, p.get("ws"), M),
        "minverse": (mi, mf, q, p.get("ws"), p.get("F"), M),
        "rnea_derivatives": (mi, mf, q, v, u, f, p.get("ws"), M, M, M),
        "completely_fused": (mi, mf, q, v, u, f, p.get("ws"), p.get("qdd"), p.get("S3"),
                             p.get("F"), M, M, M),
        "split_aba": (mi, mf, q, v, u, f, p.get("ws"), p.get("qdd")),
        "split_idsva": (mi, mf, q, v, f, p.get("ws"), p.get("qdd"), p.get("D")),
        "fused": (mi, mf, q, v, u, f, p.get("ws"), p.get("qdd"), p.get("D")),
        "neg_minv": (mi, mf, q, p.get("ws"), p.get("F"), p.get("D"), p.get("buf"), M, M, M),
        "columns": (mi, mf, q, v, u, f, p.get("ws"), p.get("ws2"), p.get("qdd"), p.get("D"),
                    p.get("F"), p.get("buf"), M, M, M),
    }[name]


def compile_ptx(model, cc=(9, 0), names=None, dtypes=(np.float64, np.float32),
                layouts=LAYOUTS, log=None):
    """Compile launch kernels (all by default) to PTX for compute capability ``cc``, with
    every device function they call, for each dtype, layout and with/without external
    forces: the full CUDA typing and NVVM path, no GPU needed (numba-cuda and its NVVM
    wheel are). Returns {(name, dtype, layout, fext): PTX size in bytes}; raises what
    the compiler raises.

    Without a GPU, device functions are compiled for ``cc`` instead of the current
    device's: run this in a process that launches nothing afterwards."""
    from numba import typeof
    import numba.cuda.dispatcher as cuda_dispatcher

    class _Offline:
        compute_capability = tuple(cc)

    saved = cuda_dispatcher.get_current_device
    if not cuda.is_available():
        cuda_dispatcher.get_current_device = _Offline
    sizes = {}
    try:
        for name in names or _FACTORIES:
            for dt in dtypes:
                for layout in layouts:
                    fexts = (False,) if name in NO_FEXT else (False, True)
                    for fx in fexts:
                        sig = tuple(typeof(a) for a in
                                    _example_args(model, name, dt, layout, fx))
                        ptx, _ = cuda.compile_ptx(kernel(name, fx, layout).py_func, sig,
                                                  cc=tuple(cc))
                        key = (name, np.dtype(dt).name, layout, fx)
                        sizes[key] = len(ptx)
                        if log:
                            log(f"{key}: {len(ptx)} bytes of PTX")
    finally:
        cuda_dispatcher.get_current_device = saved
    return sizes
