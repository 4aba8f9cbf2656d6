"""Public dynamics functions: validate, pick the compiled entry point (single or batch),
and return caller-owned arrays.

Every function takes a single state (q of shape (nq,), ...) or a batch with a leading
axis (q of shape (B, nq), ...), computed on all cores. Inputs may be float64, float32
(computed in float32) or complex128 (complex step); mixed inputs are promoted.
Arrays on a CUDA device (``__cuda_array_interface__``: Numba, CuPy, PyTorch) are computed
there by rbdiff.gpu and the results stay there (Numba device arrays).
"""

from math import prod as _prod

import numpy as np
from numba.core.errors import TypingError

from .cpu import batch, fronts, policy, single
from .cpu.fronts import bind as _bind
from .cpu.outputs import MIN_BYTES as _OUTPUTS_MIN_BYTES
from .cpu.outputs import empty as _outputs
from .declare import Function
from .kernels.jit import native
from .validation import F64 as _F64
from .validation import ND as _ND
from .validation import no_forces as _no_forces

# The fast paths: a call hands its own arguments unchecked to a compiled front
# (cpu/fronts.py), which reads the model's record and runs the single entry; the entry
# checks them itself (kernels.fastargs: None unless they are float64 1-D ndarrays, fext a
# C-contiguous float64 (njoints, 6) one). Only then does a batch ask
# for dtype float64 and ndim 2 (q also an ndarray, so device arrays go to rbdiff.gpu; the
# batch entries check the shapes, cpu.checks): asking q.ndim first cost every single call
# ~45 ns, trying the single entry first costs a batch 0.1-0.25 us (5-7 % at panda's
# B = 4, 1-3 % at 16). Anything else leaves them: no .dtype (AttributeError), input the
# entry refuses (ValueError); the general path then validates it and names the argument.
_FAST_MISS = (AttributeError, TypeError, ValueError, TypingError)   # TypingError: a device
# array beside NumPy ones in a batch
# module globals: one dictionary lookup on the fast path instead of two
_empty = np.empty
# the fronts (cpu/fronts.py): compiled, they take the call's own arguments and read the
# model's record; bound on first call as METH_FASTCALL builtins
_rnea_front = _bind(fronts.rnea_front, "_rnea_front", globals())
_rnea_fext_front = _bind(fronts.rnea_fext_front, "_rnea_fext_front", globals())
_aba_front = _bind(fronts.aba_front, "_aba_front", globals())
_aba_fext_front = _bind(fronts.aba_fext_front, "_aba_fext_front", globals())
_crba_front = _bind(fronts.crba_front, "_crba_front", globals())
_minverse_front = _bind(fronts.minverse_front, "_minverse_front", globals())
_run = policy.run
_RNEA_B = (batch.rnea_batch, batch.rnea_parallel)
_ABA_B = (batch.aba_batch, batch.aba_parallel)
_CRBA_B = (batch.crba_batch, batch.crba_parallel)
_MINV_B = (batch.minverse_batch, batch.minverse_parallel)
# the same pairs for the fast paths (float64 ndarrays): serial without type dispatch
_RNEA_F = policy.fast_pair(*_RNEA_B)
_ABA_F = policy.fast_pair(*_ABA_B)
_CRBA_F = policy.fast_pair(*_CRBA_B, inputs=(2,))
_MINV_F = policy.fast_pair(*_MINV_B, inputs=(2,))
_rnea_few = native(batch.rnea_few, "_rnea_few", globals())      # batches of a few us
_aba_few = native(batch.aba_few, "_aba_few", globals())
_gravity_front = _bind(fronts.gravity_front, "_gravity_front", globals())
_nonlinear_effects_front = _bind(fronts.nonlinear_effects_front, "_nonlinear_effects_front",
                                 globals())


def _batch_out(shape):
    """A batch's new output: np.empty's, or past cpu.outputs.MIN_BYTES a view of a kept
    block (no page faults on every call)."""
    if _prod(shape) < _OUT_MIN_ITEMS:
        return _empty(shape)
    return _outputs((shape,))[0]


_OUT_MIN_ITEMS = _OUTPUTS_MIN_BYTES // 8
_IN_QVA = (("q", "nq"), ("v", "nv"), ("a", "nv"))
_IN_QVT = (("q", "nq"), ("v", "nv"), ("tau", "nv"))
_NV, _NVNV = (("nv",),), (("nv", "nv"),)
# the general paths (declare.py): validation, any dtype, batches, errors, devices
_RNEA = Function("rnea", single.rnea_one, _RNEA_B, _IN_QVA, _NV, fext=True, gpu="rnea")
_ABA = Function("aba", single.aba_one, _ABA_B, _IN_QVT, _NV, fext=True, gpu="aba")
_CRBA = Function("crba", single.crba_one, _CRBA_B, _IN_QVA[:1], _NVNV, gpu="crba")
_MINV = Function("minverse", single.minverse_one, _MINV_B, _IN_QVA[:1], _NVNV,
                 scratch="workspace+forces", gpu="minverse")
_NLE = Function("nonlinear_effects", single.nonlinear_effects_one,
                (batch.nonlinear_effects_batch, batch.nonlinear_effects_parallel),
                _IN_QVA[:2], _NV, gpu="nonlinear_effects")
_GRAVITY = Function("gravity", single.gravity_one,
                    (batch.gravity_batch, batch.gravity_parallel), _IN_QVA[:1], _NV,
                    gpu="gravity")


def rnea(model, q, v, a, fext=None):
    """Inverse dynamics tau = M(q) a + C(q, v) v + g(q) - sum_i J_i^T fext_i (RNEA,
    Featherstone 2008 Table 5.1; Carpentier & Mansard 2018 Alg. 1).

    q (nq,), v (nv,), a (nv,); fext (njoints, 6) spatial forces [linear, angular] on each
    joint's body in the joint's local frame, or None. Returns tau (nv,). A leading batch
    axis on every argument gives (B, nv)."""
    try:    # fast paths (see _FAST_MISS); the entries check types, lengths and values,
        # and make tau from its shape (kernels.fastargs.output_arg)
        tau = (_rnea_front(model, q, v, a) if fext is None
               else _rnea_fext_front(model, q, v, a, fext))
        if tau is not None:
            return tau
        if (fext is None and q.dtype is v.dtype is a.dtype is _F64
                and 2 == q.ndim == v.ndim == a.ndim and type(q) is _ND):
            n = len(q)
            tau = _batch_out((n, model.nv))
            _run(model, *_RNEA_F, n,
                 (model.mi, model.mf, q, v, a, _no_forces(n), tau), (), _rnea_few)
            return tau
    except _FAST_MISS:
        pass
    return _RNEA(model, q, v, a, fext=fext)


def aba(model, q, v, tau, fext=None):
    """Forward dynamics qdd = M(q)^-1 (tau + sum_i J_i^T fext_i - C(q, v) v - g(q)) by the
    Articulated Body Algorithm (Featherstone 2008 Table 7.1), O(N).

    q (nq,), v (nv,), tau (nv,), fext (njoints, 6) local-frame forces or None.
    Returns qdd (nv,); a leading batch axis gives (B, nv)."""
    try:
        qdd = (_aba_front(model, q, v, tau) if fext is None
               else _aba_fext_front(model, q, v, tau, fext))
        if qdd is not None:
            return qdd
        if (fext is None and q.dtype is v.dtype is tau.dtype is _F64
                and 2 == q.ndim == v.ndim == tau.ndim and type(q) is _ND):
            n = len(q)
            qdd = _batch_out((n, model.nv))
            _run(model, *_ABA_F, n,
                 (model.mi, model.mf, q, v, tau, _no_forces(n), qdd), (), _aba_few)
            return qdd
    except _FAST_MISS:
        pass
    return _ABA(model, q, v, tau, fext=fext)


def crba(model, q):
    """Joint-space inertia matrix M(q) (nv, nv), full and symmetric, by the Composite
    Rigid Body Algorithm (Featherstone 2008 Table 6.2). Batch: q (B, nq) -> (B, nv, nv)."""
    try:    # the entry makes M (kernels.fastargs.output_arg)
        M = _crba_front(model, q)
        if M is not None:
            return M
        if q.dtype is _F64 and q.ndim == 2 and type(q) is _ND:
            M = _batch_out((q.shape[0],) + model._svv)
            _run(model, *_CRBA_F, q.shape[0], (model.mi, model.mf, q, M))
            return M
    except _FAST_MISS:
        pass
    return _CRBA(model, q)


def minverse(model, q):
    """M(q)^-1 (nv, nv), full and symmetric, computed without forming M (Carpentier &
    Mansard 2018 sec. IV-C: ABA's backward pass on unit torques). Batch: (B, nv, nv)."""
    try:
        Minv = _minverse_front(model, q)
        if Minv is not None:
            return Minv
        if q.dtype is _F64 and q.ndim == 2 and type(q) is _ND:
            Minv = _batch_out((q.shape[0],) + model._svv)
            _run(model, *_MINV_F, q.shape[0], (model.mi, model.mf, q, Minv))
            return Minv
    except _FAST_MISS:
        pass
    return _MINV(model, q)


def nonlinear_effects(model, q, v):
    """C(q, v) v + g(q) (nv,) = rnea(q, v, 0), by RNEA without the qdd terms (as
    Pinocchio's nonLinearEffects). Batch: (B, nv)."""
    try:
        h = _nonlinear_effects_front(model, q, v)
        if h is not None:
            return h
    except _FAST_MISS:
        pass
    return _NLE(model, q, v)


def gravity(model, q):
    """Generalised gravity g(q) (nv,) = rnea(q, 0, 0), by RNEA without the velocity and
    qdd terms (as Pinocchio's computeGeneralizedGravity). Batch: (B, nv)."""
    try:
        g = _gravity_front(model, q)
        if g is not None:
            return g
    except _FAST_MISS:
        pass
    return _GRAVITY(model, q)
