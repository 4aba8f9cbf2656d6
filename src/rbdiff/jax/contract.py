"""The rules' Jacobian-vector products as one XLA custom call, not dot ops.

The custom_jvp rules (rules.py) apply the kernels' Jacobians to tangents: J (..., m, n)
times x (..., n); under grad JAX transposes them to J^T y. As XLA dots they cost little,
but they count flops: PjRt's CPU client runs a computation of 1000 estimated flops or
more asynchronously on a worker thread (``cheap_computation_`` in its cpu_client.cc), a
thread hand-off of tens of us per call on a busy machine, while custom calls count none.
So a small jit(vmap(grad(f))) whose only flops were the three products of aba's rule
(B = 4, nv = 7: 1176 flops) took 2-3x its kernels' time. ``contract`` is a primitive
whose CPU lowering is an FFI call to a Numba handler (a plain loop, no state):

- contract(J, x) = J x, contract(J, y, transpose=True) = J^T y, any leading axes shared
  by J and x (vmap moves its axis first and broadcasts the unbatched operand);
- bilinear (jax.interpreters.ad.defbilinear): its JVP and transpose are contract again
  (the transpose in J, needed by second derivatives, an outer product in jax.numpy), so
  jvp, grad, hessian and vmap compose as with the einsum it replaces;
- float64, or float32 computed in float64.
"""

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from ..kernels.jit import cached_njit
from .ffi import (_addr, _dims, _execute_frame, _in, _out_f64, _store, _vp, _words,
                  unliteral_args)


@unliteral_args          # one compile for both handlers (transpose is not a constant)
@cached_njit
def _serve_contract(frame, transpose):
    """Read the call frame (J, x) -> out and write J x (or J^T x); a call frame it does
    not understand is left alone (the lowering fixes the operands)."""
    f = _execute_frame(frame)
    if f.size == 0:
        return
    nargs, nrets = f[7], f[12]
    if nargs != 2 or nrets != 1:
        return
    args, rets = _words(f[9], nargs), _words(f[14], nrets)
    d = _dims(args[0])
    if d.size < 2:
        return
    m, n = d[d.size - 2], d[d.size - 1]
    B = 1
    for k in range(d.size - 2):
        B *= d[k]
    J = _in(args[0], B).reshape((B, m, n))
    x = _in(args[1], B)
    out = _out_f64(rets[0], B)
    for b in range(B):
        if transpose:
            for j in range(n):
                out[b, j] = 0.0
            for i in range(m):
                xi = x[b, i]
                for j in range(n):
                    out[b, j] += J[b, i, j] * xi
        else:
            for i in range(m):
                s = 0.0
                for j in range(n):
                    s += J[b, i, j] * x[b, j]
                out[b, i] = s
    _store(rets[0], out)


def _h_contract(frame):
    _serve_contract(_addr(frame), False)
    return _vp(0)


def _h_contract_t(frame):
    _serve_contract(_addr(frame), True)
    return _vp(0)


_TARGETS = {}


def _target(transpose):
    """Compile (first use; cached on disk) and register the handler."""
    t = _TARGETS.get(transpose)
    if t is None:
        import ctypes

        from .calls import _compiled
        c = _compiled(_h_contract_t if transpose else _h_contract)
        name = "rbdiff_contract_t" if transpose else "rbdiff_contract"
        fn = ctypes.cast(c.address, ctypes.c_void_p)
        jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(fn), platform="cpu")
        t = _TARGETS[transpose] = (name, c)        # keep the compiled cfunc alive
    return t[0]


contract_p = Primitive("rbdiff_contract")


def contract(J, x, transpose=False):
    """J (..., m, n) x (..., n) -> (..., m); transpose: J^T x, x (..., m) -> (..., n)."""
    x = x.astype(J.dtype)
    return contract_p.bind(J, x, transpose=bool(transpose))


def _shape(J, x, transpose):
    if J.ndim < 2 or x.ndim != J.ndim - 1 or x.shape[:-1] != J.shape[:-2] or \
            x.shape[-1] != J.shape[-2 if transpose else -1]:
        raise ValueError(f"rbdiff.jax contract: shapes {J.shape} and {x.shape} "
                         f"(transpose={transpose})")
    return J.shape[:-2] + (J.shape[-1] if transpose else J.shape[-2],)


@contract_p.def_abstract_eval
def _abstract(J, x, transpose):
    return jax.core.ShapedArray(_shape(J, x, transpose), J.dtype)


def _lowered(J, x, transpose):
    out = jax.ShapeDtypeStruct(_shape(J, x, transpose), J.dtype)
    return jax.ffi.ffi_call(_target(transpose), out)(J, x)


mlir.register_lowering(contract_p, mlir.lower_fun(_lowered, multiple_results=False),
                       platform="cpu")
_eager = jax.jit(_lowered, static_argnames="transpose")
contract_p.def_impl(lambda J, x, transpose: _eager(J, x, transpose=transpose))


def _batch(args, dims, transpose):
    J, x = args
    dJ, dx = dims
    size = J.shape[dJ] if dJ is not None else x.shape[dx]
    J = jnp.moveaxis(J, dJ, 0) if dJ is not None else \
        jnp.broadcast_to(J, (size,) + J.shape)
    x = jnp.moveaxis(x, dx, 0) if dx is not None else \
        jnp.broadcast_to(x, (size,) + x.shape)
    return contract(J, x, transpose), 0


batching.primitive_batchers[contract_p] = _batch


def _transpose_J(ct, J, x, transpose):
    """The cotangent of J: ct x^T (J x) or x ct^T (J^T x)."""
    a, b = (x, ct) if transpose else (ct, x)
    return a[..., :, None] * b[..., None, :]


def _transpose_x(ct, J, x, transpose):
    return contract(J, ct, not transpose)


ad.defbilinear(contract_p, _transpose_J, _transpose_x)

__all__ = ["contract", "contract_p"]
