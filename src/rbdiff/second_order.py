"""Second-order derivatives of inverse and forward dynamics.

``rnea_second_order_derivatives`` evaluates d2tau/dq2, d2tau/dv2, d2tau/dqdv and dM/dq
analytically by IDSVA-SO (Singh, Russell & Wensing 2023, Appendix C, world frame,
multi-DoF joints, O(N d^2)); ``aba_second_order_derivatives`` evaluates d2qdd/dq2,
d2qdd/dv2, d2qdd/dqdv and d2qdd/dtaudq by FDSVA-SO (the same paper, eq. 46). Numerical
baselines share the signature: ``method="complex_step"`` (complex step through the
analytical first-order kernels compiled for complex128, exact to rounding),
``"finite_difference"`` (central differences of the analytical first-order derivatives,
the paper's Finite-Diff-2) and, for inverse dynamics, ``"finite_difference_rnea"``
(second-order central differences of RNEA, Finite-Diff-1).

Tensors are (nv, nv, nv), output index first, q in the tangent space:
``T[i, j, k] = d/dx_k (d f_i / d y_j)``, the derivative along k of the first-order
derivative along j, so that d2tau_dq2[:, j, k] is the complex step along tangent
direction k of ``rnea_derivatives(...).dtau_dq[:, j]``. It equals d2tau_dq2[:, k, j]
unless dofs j and k belong to one spherical or free-flyer joint, whose tangent
coordinates do not commute.

The four tensors of one call are views of one block (4, nv, nv, nv) (or
(4, B, nv, nv, nv)) that the caller owns: one allocation, whose pages glibc's allocator
reuses from call to call up to 32 MB (nv ~ 100 for one state); a larger block is mapped
afresh, and its first touch costs page faults on every call. Arrays on a CUDA device
are computed there (method="idsva": rbdiff.gpu.rnea_second_order_derivatives /
aba_second_order_derivatives, from the same kernels) and the tensors stay there.
"""

import numpy as np

from .api import aba, rnea
from .cpu import batch as cb
from .cpu import single as cs
from .kernels import fdsva_so as fk
from .derivatives import _CS_STEP, _FD_STEP, aba_derivatives, rnea_derivatives
from .configuration import integrate
from .declare import Function
from .results import ABASecondOrderDerivatives, RNEASecondOrderDerivatives
from .validation import F64 as _F64
from .validation import ND as _ND
from .validation import gpu_call, on_device

RNEA_METHODS = ("idsva", "complex_step", "finite_difference", "finite_difference_rnea")
ABA_METHODS = ("idsva", "complex_step", "finite_difference")
# FDSVA-SO routes (kernels/fdsva_so.py): keyword -> kernel code
INNER_ROUTES = {"auto": fk.AUTO, "dtm": fk.DTM, "idfoza": fk.IDFOZA}
OUTER_ROUTES = {"auto": fk.AUTO, "dense": fk.DENSE, "aza": fk.AZA}
_FD2_STEP = np.finfo(np.float64).eps ** (1 / 4)   # second differences: O(h^2) vs eps/h^2
_rnea_so_one, _aba_so_one = cs.rnea_second_order_one, cs.aba_second_order_one
_new = tuple.__new__


def _check_method(method, methods, name="method"):
    if method not in methods:
        raise ValueError(f"{name}: expected one of {', '.join(map(repr, methods))}, "
                         f"got {method!r}")


def _fast(q, v, u, fext):
    """True for the common case the entry point can take directly."""
    return (fext is None and type(q) is _ND and type(v) is _ND and type(u) is _ND
            and q.dtype is _F64 and v.dtype is _F64 and u.dtype is _F64
            and q.ndim == 1 and v.ndim == 1 and u.ndim == 1)


_T4 = (("nv", "nv", "nv"),) * 4
# the general paths (declare.py): the four tensors are views of one block; the entries
# take their options (FDSVA-SO's routes) after the outputs
_RNEA_SO = Function("rnea_second_order_derivatives", cs.rnea_second_order_one,
                    (cb.rnea_second_order_batch, cb.rnea_second_order_parallel),
                    (("q", "nq"), ("v", "nv"), ("a", "nv")), _T4, fext=True,
                    scratch="none", result=RNEASecondOrderDerivatives, options_last=True,
                    block=True)
_ABA_SO = Function("aba_second_order_derivatives", cs.aba_second_order_one,
                   (cb.aba_second_order_batch, cb.aba_second_order_parallel),
                   (("q", "nq"), ("v", "nv"), ("tau", "nv")), _T4, fext=True,
                   scratch="none", result=ABASecondOrderDerivatives, options_last=True,
                   block=True)


# ---- numerical baselines -------------------------------------------------------------

def _tensor(steps):
    """(nv_steps, nv, nv) derivatives of a matrix along each step -> (nv, nv, nv_steps)."""
    return np.ascontiguousarray(np.transpose(steps, (1, 2, 0)))


def _through_first_order(model, fo, q, v, u, fext, method):
    """The four tensors of one state by stepping the analytical first-order derivatives
    fo(model, q, v, u, fext) -> (d/dq, d/dv, d/du): along q (tangent) for (d/dq, d/du)
    and along v for (d/dv, d/dq), in one batched call."""
    nv, nq = model.nv, model.nq
    E = np.eye(nv)
    if method == "complex_step":
        h = _CS_STEP
        qc = q.astype(complex)
        qs = np.concatenate([integrate(model, qc, 1j * h * E), np.broadcast_to(qc, (nv, nq))])
        vs = np.concatenate([np.broadcast_to(v, (nv, nv)), v + 1j * h * E]).astype(complex)
        us = np.broadcast_to(u, (2 * nv, nv)).astype(complex)
        fs = (None if fext is None
              else np.broadcast_to(fext, (2 * nv,) + fext.shape).astype(complex))
        d_q, d_v, d_u = (x.imag / h for x in fo(model, qs, vs, us, fs))
        return (_tensor(d_q[:nv]), _tensor(d_v[nv:]), _tensor(d_q[nv:]), _tensor(d_u[:nv]))
    hq = _FD_STEP
    hv = _FD_STEP * np.maximum(1.0, np.abs(v))
    D = np.concatenate([E, -E])
    qs = np.concatenate([integrate(model, q, hq * D), np.broadcast_to(q, (2 * nv, nq))])
    vs = np.concatenate([np.broadcast_to(v, (2 * nv, nv)), v + hv * D])
    us = np.broadcast_to(u, (4 * nv, nv))
    fs = None if fext is None else np.broadcast_to(fext, (4 * nv,) + fext.shape)
    d_q, d_v, d_u = fo(model, qs, vs, us, fs)

    def central(x, first, h):
        plus, minus = x[first:first + nv], x[first + nv:first + 2 * nv]
        return _tensor((plus - minus) / (2 * h)[:, None, None])

    hqv = np.full(nv, hq)
    return (central(d_q, 0, hqv), central(d_v, 2 * nv, hv), central(d_q, 2 * nv, hv),
            central(d_u, 0, hqv))


def _rnea_second_differences(model, q, v, a, fext):
    """Finite-Diff-1: T[:, j, k] = (f(+k,+j) - f(+k,-j) - f(-k,+j) + f(-k,-j)) / (4 hk hj)
    over RNEA, f(sk, sj) the torque with x_k stepped by sk hk and then y_j by sj hj (q along
    the tangent space: integrate(integrate(q, sk h e_k), sj h e_j)); one batched call."""
    nv, nq = model.nv, model.nq
    h = _FD2_STEP
    hv = h * np.maximum(1.0, np.abs(v))
    ha = h * np.maximum(1.0, np.abs(a))
    E = np.eye(nv)
    S = np.array([(1, 1), (1, -1), (-1, 1), (-1, -1)], dtype=float)  # (sk, sj)
    kk, jj = np.meshgrid(np.arange(nv), np.arange(nv), indexing="ij")
    kk, jj = kk.ravel(), jj.ravel()                 # pair p = (k, j), k-major
    sk = np.repeat(S[:, 0], nv * nv)
    sj = np.repeat(S[:, 1], nv * nv)
    K, J = np.tile(kk, 4), np.tile(jj, 4)           # 4 nv^2 rows: sign pattern major
    m = 4 * nv * nv
    q_k = integrate(model, q, (sk * h)[:, None] * E[K])          # q stepped along k
    # d2tau/dq2: then along j
    q_kj = integrate(model, q_k, (sj * h)[:, None] * E[J])
    # d2tau/dqdv[:, j, k]: q along j, v along k
    q_j = integrate(model, q, (sj * h)[:, None] * E[J])
    v_k = v + (sk * hv[K])[:, None] * E[K]
    # d2tau/dv2[:, j, k]
    v_kj = v_k + (sj * hv[J])[:, None] * E[J]
    # dM/dq[:, j, k] = d2tau / da_j dq_k: q along k, a along j
    a_j = a + (sj * ha[J])[:, None] * E[J]
    qs = np.concatenate([q_kj, q_j, np.broadcast_to(q, (m, nq)), q_k])
    vs = np.concatenate([np.broadcast_to(v, (m, nv)), v_k, v_kj, np.broadcast_to(v, (m, nv))])
    as_ = np.concatenate([np.broadcast_to(a, (3 * m, nv)), a_j])
    fs = None if fext is None else np.broadcast_to(fext, (4 * m,) + fext.shape)
    tau = rnea(model, qs, vs, as_, fs).reshape(4, 4, nv, nv, nv)   # block, sign, k, j, i
    mixed = tau[:, 0] - tau[:, 1] - tau[:, 2] + tau[:, 3]          # (block, k, j, i)
    hq = np.full(nv, h)
    steps = [(hq, hq), (hv, hq), (hv, hv), (hq, ha)]               # (h along k, h along j)
    out = []
    for b, (h_k, h_j) in enumerate(steps):
        t = mixed[b] / (4 * h_k[:, None, None] * h_j[None, :, None])   # (k, j, i)
        out.append(np.ascontiguousarray(np.transpose(t, (2, 1, 0))))
    return out[0], out[2], out[1], out[3]                           # Q, V, X, D


def _numerical(model, check, per_state, q, v, u, fext, names):
    """Validate (the plain function check raises the precise error), then evaluate
    per_state(q, v, u, fext) for one state or for each item of a batch."""
    q, v, u = (np.asarray(x) for x in (q, v, u))
    for name, x, n in zip(names, (q, v, u), (model.nq, model.nv, model.nv)):
        if x.ndim not in (1, 2) or x.shape[-1] != n:
            raise ValueError(f"{name}: expected shape ({n},) or (B, {n}), got {x.shape}")
    check(model, q, v, u, fext)
    q, v, u = (np.asarray(x.real if np.iscomplexobj(x) else x, dtype=np.float64)
               for x in (q, v, u))
    f = None if fext is None else np.asarray(fext, dtype=np.float64)
    if q.ndim == 1:
        return per_state(q, v, u, f)
    per = [per_state(q[b], v[b], u[b], None if f is None else f[b]) for b in range(q.shape[0])]
    return tuple(np.stack([p[k] for p in per]) for k in range(4))


# ---- public functions ----------------------------------------------------------------

def rnea_second_order_derivatives(model, q, v, a, fext=None, method="idsva"):
    """Second-order partial derivatives of inverse dynamics tau = ID(q, v, a, fext).

    q (nq,), v (nv,), a (nv,); fext (njoints, 6) spatial forces [linear, angular] on each
    joint's body in the joint's local frame, or None. Returns
    RNEASecondOrderDerivatives(d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq), each
    (nv, nv, nv), output index first: d2tau_dq2[i, j, k] = d^2 tau_i / dq_j dq_k (tangent
    space; the derivative along q_k of dtau_dq[i, j]), d2tau_dv2[i, j, k] =
    d^2 tau_i / dv_j dv_k, d2tau_dqdv[i, j, k] = d^2 tau_i / dq_j dv_k, dM_dq[i, j, k] =
    dM_ij / dq_k (d2tau/da2 = 0 and d2tau/dadq = dM_dq). A leading batch axis on every
    argument gives (B, nv, nv, nv) tensors; CUDA device arrays give device arrays
    (method="idsva" only; rbdiff.gpu.rnea_second_order_derivatives).

    method: "idsva" (default; IDSVA-SO, Singh et al. 2023 Appendix C, O(N d^2)),
    "complex_step" (the first-order IDSVA kernel on complex128, stepped along the
    tangent space of q and along v: exact to rounding), "finite_difference" (central
    differences of the analytical first-order derivatives, step eps^(1/3): Finite-Diff-2)
    or "finite_difference_rnea" (second-order central differences of RNEA, step
    eps^(1/4): Finite-Diff-1)."""
    _check_method(method, RNEA_METHODS)
    if method == "idsva" and _fast(q, v, a, fext):
        nv = model.nv
        out = np.empty((4, nv, nv, nv))
        t = out[0], out[1], out[2], out[3]
        try:
            _rnea_so_one(model.mi, model.mf, q, v, a, None, *t)
            return _new(RNEASecondOrderDerivatives, t)
        except ValueError:
            pass
    if on_device(q, v, a, fext):
        return gpu_call("rnea_second_order_derivatives", model, q, v, a, fext, method=method)
    if method != "idsva":
        if method == "finite_difference_rnea":
            per_state = lambda q_, v_, a_, f_: _rnea_second_differences(model, q_, v_, a_, f_)
        else:
            per_state = lambda q_, v_, a_, f_: _through_first_order(
                model, rnea_derivatives, q_, v_, a_, f_, method)
        return RNEASecondOrderDerivatives(*_numerical(model, rnea, per_state, q, v, a, fext,
                                                      ("q", "v", "a")))
    return _RNEA_SO(model, q, v, a, fext=fext)


def aba_second_order_derivatives(model, q, v, tau, fext=None, method="idsva", inner="auto",
                                 outer="auto"):
    """Second-order partial derivatives of forward dynamics qdd = FD(q, v, tau, fext).

    q (nq,), v (nv,), tau (nv,), fext (njoints, 6) local-frame forces or None. Returns
    ABASecondOrderDerivatives(d2qdd_dq2, d2qdd_dv2, d2qdd_dqdv, d2qdd_dtaudq), each
    (nv, nv, nv), output index first: d2qdd_dq2[i, j, k] = d^2 qdd_i / dq_j dq_k (tangent
    space), d2qdd_dv2[i, j, k] = d^2 qdd_i / dv_j dv_k, d2qdd_dqdv[i, j, k] =
    d^2 qdd_i / dq_j dv_k, d2qdd_dtaudq[i, j, k] = d^2 qdd_i / dtau_j dq_k = dMinv_ij/dq_k
    (qdd is affine in tau: the other tau derivatives vanish). A leading batch axis gives
    (B, nv, nv, nv); CUDA device arrays give device arrays (method="idsva" only;
    rbdiff.gpu.aba_second_order_derivatives).

    method: "idsva" (default; FDSVA-SO, Singh et al. 2023 eq. 46: qdd = ABA(q, v, tau),
    the inverse-dynamics tensors at (q, v, qdd) by IDSVA-SO, the first-order derivatives
    by FDSVA, M^-1 without M), "complex_step" (the analytical first-order ABA
    derivatives on complex128, stepped along q's tangent space and v) or
    "finite_difference" (central differences of them, step eps^(1/3)).

    inner, outer (method "idsva"; the numerical methods ignore them; singh-2023 sec.
    VI-A): how eq. 46's products are formed. inner, the products D.P with D = dM/dq:
    "dtm" (tensor-matrix products over dM/dq's nonzeros), "idfoza" (one IDSVA call at
    zero velocity and gravity per column of P, eq. 52) or "auto" (the measured
    crossover, kernels/idfoza.py). outer, the products with -M^-1: "dense" (M^-1 times
    the flattened tensor), "aza" (solves with M's sparse L^T D L factor: the batched
    form of AZA's per-column ABA) or "auto" (the measured crossover, kernels/fdsva_so.py).
    All routes give the same tensors up to rounding."""
    _check_method(method, ABA_METHODS)
    _check_method(inner, INNER_ROUTES, "inner")
    _check_method(outer, OUTER_ROUTES, "outer")
    routes = INNER_ROUTES[inner], OUTER_ROUTES[outer]
    if method == "idsva" and _fast(q, v, tau, fext):
        nv = model.nv
        out = np.empty((4, nv, nv, nv))
        t = out[0], out[1], out[2], out[3]
        try:
            _aba_so_one(model.mi, model.mf, q, v, tau, None, *t, *routes)
            return _new(ABASecondOrderDerivatives, t)
        except ValueError:
            pass
    if on_device(q, v, tau, fext):
        if inner != "auto" or outer != "auto":
            raise ValueError("inner, outer: the GPU forms eq. 46's products by the automatic "
                             "routes only; leave them 'auto'")
        return gpu_call("aba_second_order_derivatives", model, q, v, tau, fext, method=method)
    if method != "idsva":
        per_state = lambda q_, v_, t_, f_: _through_first_order(
            model, aba_derivatives, q_, v_, t_, f_, method)
        return ABASecondOrderDerivatives(*_numerical(model, aba, per_state, q, v, tau, fext,
                                                     ("q", "v", "tau")))
    return _ABA_SO(model, q, v, tau, fext=fext, options=routes)
