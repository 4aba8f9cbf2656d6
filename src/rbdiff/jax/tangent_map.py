"""The matrix T(q) (..., nv, nq) of the ambient-to-tangent map e = T(q) dq
(rbdiff.model.tangent.tangent_of_ambient) as one FFI custom call.

The rules read q through the retraction, so every derivative in q is a tangent
derivative composed with T(q). Written in jax.numpy, T's products and their transposes
are a few hundred XLA flops per item, enough to push a small jitted gradient past
PjRt's 1000-flop line into its asynchronous CPU dispatch (see contract.py). Here T(q) is
a Numba handler (closed-form blocks per joint, from the model's joint table passed as an
int32 operand), e = contract(T(q), dq), so the products are custom calls as well; T's own
derivative (second derivatives only) is the jax.numpy map's, through a custom_jvp.
"""

import ctypes

import numpy as np
from numba import carray

import jax
import jax.numpy as jnp

from ..kernels.jit import cached_njit
from ..model import layout as L
from ..model.tangent import tangent_of_ambient
from .ffi import (_addr, _dims, _execute_frame, _in, _out_f64, _size, _store, _vp, _words)

_REV, _PRI, _UNB, _SPH = L.REVOLUTE, L.PRISMATIC, L.REVOLUTE_UNBOUNDED, L.SPHERICAL


@cached_njit
def _quaternion_block(T, q, b, k, a, nq):
    """T[a:a+3, k:k+4] of e = (2 / r) (w dx_u - dx_w u - u x dx_u) at x = q[b, k:k+4];
    returns the unit quaternion's components."""
    x0, x1, x2, x3 = q[b, k], q[b, k + 1], q[b, k + 2], q[b, k + 3]
    r = np.sqrt(x0 * x0 + x1 * x1 + x2 * x2 + x3 * x3)
    u0, u1, u2, w = x0 / r, x1 / r, x2 / r, x3 / r
    s = 2.0 / r
    T[b, a * nq + k], T[b, a * nq + k + 1], T[b, a * nq + k + 2] = s * w, s * u2, -s * u1
    T[b, (a + 1) * nq + k], T[b, (a + 1) * nq + k + 1] = -s * u2, s * w
    T[b, (a + 1) * nq + k + 2] = s * u0
    T[b, (a + 2) * nq + k], T[b, (a + 2) * nq + k + 1] = s * u1, -s * u0
    T[b, (a + 2) * nq + k + 2] = s * w
    T[b, a * nq + k + 3], T[b, (a + 1) * nq + k + 3] = -s * u0, -s * u1
    T[b, (a + 2) * nq + k + 3] = -s * u2
    return u0, u1, u2, w


@cached_njit
def _serve_tangent(frame):
    """(joint table, q (..., nq)) -> T (..., nv, nq). Joint table: [joints, nv, then
    (type, q index, tangent index) per joint]; only its first entries are read (vmap may
    broadcast it)."""
    f = _execute_frame(frame)
    if f.size == 0:
        return
    nargs, nrets = f[7], f[12]
    if nargs != 2 or nrets != 1:
        return
    args, rets = _words(f[9], nargs), _words(f[14], nrets)
    table = carray(_vp(_words(args[0], 6)[3]), (_size(args[0]),), np.int32)
    d = _dims(args[1])
    nq = d[d.size - 1]
    B = 1
    for k in range(d.size - 1):
        B *= d[k]
    q = _in(args[1], B)
    T = _out_f64(rets[0], B)
    nj = table[0]
    for b in range(B):
        for c in range(T.shape[1]):
            T[b, c] = 0.0
        for j in range(nj):
            t, k, a = table[2 + 3 * j], table[3 + 3 * j], table[4 + 3 * j]
            if t == _REV or t == _PRI:
                T[b, a * nq + k] = 1.0
            elif t == _UNB:
                c, s = q[b, k], q[b, k + 1]
                r2 = c * c + s * s
                T[b, a * nq + k], T[b, a * nq + k + 1] = -s / r2, c / r2
            elif t == _SPH:
                _quaternion_block(T, q, b, k, a, nq)
            else:                                   # free flyer: R(n)^T dp, then angular
                x, y, z, w = _quaternion_block(T, q, b, k + 3, a + 3, nq)
                # R(n) row by row; T's block is its transpose: T[a + i, k + j] = R[j, i]
                r0, r1, r2 = a * nq + k, (a + 1) * nq + k, (a + 2) * nq + k
                T[b, r0], T[b, r1], T[b, r2] = (1 - 2 * (y * y + z * z), 2 * (x * y - z * w),
                                                2 * (x * z + y * w))
                T[b, r0 + 1], T[b, r1 + 1], T[b, r2 + 1] = (2 * (x * y + z * w),
                                                            1 - 2 * (x * x + z * z),
                                                            2 * (y * z - x * w))
                T[b, r0 + 2], T[b, r1 + 2], T[b, r2 + 2] = (2 * (x * z - y * w),
                                                            2 * (y * z + x * w),
                                                            1 - 2 * (x * x + y * y))
    _store(rets[0], T)


def _h_tangent(frame):
    _serve_tangent(_addr(frame))
    return _vp(0)


_TARGET = []


def _target():
    if not _TARGET:
        from .calls import _compiled
        c = _compiled(_h_tangent)
        fn = ctypes.cast(c.address, ctypes.c_void_p)
        jax.ffi.register_ffi_target("rbdiff_tangent_matrix", jax.ffi.pycapsule(fn),
                                    platform="cpu")
        _TARGET.append(c)                           # keep the compiled cfunc alive
    return "rbdiff_tangent_matrix"


def joint_table(model):
    """[joints, nv, (type, q index, tangent index) per joint] (int32), in
    tangent_of_ambient's order."""
    rows, kv = [], 0
    for i in range(1, model.njoints):
        t, k = int(model.joint_types[i]), int(model.idx_q[i])
        rows += [t, k, kv]
        kv += L.JOINT_NV[t]
    return np.array([model.njoints - 1, model.nv] + rows, np.int32)


def tangent_matrix_function(model):
    """T(q) (..., nv, nq) for ``model``: the FFI call, differentiable (its derivative is
    the jax.numpy map's)."""
    table = joint_table(model)
    nv, nq = model.nv, model.nq

    def general(q):
        eye = jnp.eye(nq, dtype=q.dtype)
        shape = q.shape[:-1] + (nq,)        # (a revolute joint's row comes unbatched)
        return jnp.stack([jnp.broadcast_to(c, shape)
                          for c in tangent_of_ambient(model, q[..., None, :], eye)], -2)

    @jax.custom_jvp
    def tangent_matrix(q):
        out = jax.ShapeDtypeStruct(q.shape[:-1] + (nv, nq), q.dtype)
        return jax.ffi.ffi_call(_target(), out, vmap_method="broadcast_all")(
            jnp.asarray(table), q)

    @tangent_matrix.defjvp
    def _(primals, tangents):
        return jax.jvp(general, primals, tangents)

    tangent_matrix.general = general
    return tangent_matrix
