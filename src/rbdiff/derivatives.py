"""First-order derivatives of inverse and forward dynamics.

``rnea_derivatives`` and ``aba_derivatives`` evaluate the partial derivatives analytically
by IDSVA (Singh, Russell & Wensing 2022, Alg. 1, world frame, multi-DoF joints) and, for
forward dynamics, Carpentier & Mansard 2018 eq. 24. Two numerical baselines share the
signature: ``method="complex_step"`` (the RNEA / ABA kernels compiled for complex128,
exact to rounding) and ``method="finite_difference"`` (central differences).
``method="chain_rule"`` is the second analytical method: the chain rule applied to RNEA
(Carpentier & Mansard 2018 Alg. 2 and 3, world frame, kernels/rnea_chain_rule.py).
For forward dynamics, ``product`` picks how -M^-1 dtau/du (eq. 24) is formed: dense
multiplication by M^-1 (``"dmm"``), ABA with zero velocity and gravity per column
(``"aza"``, Singh et al. 2022 sec. V-A, kernels/aza.py), or ``"auto"``, the measured
crossover (kernels/aza.py: AZA when the mean branch length reaches AZA_MIN_BRANCH dofs).
Derivatives with respect to q are taken in the tangent space:
d f(integrate(q, e)) / d e at e = 0, as Pinocchio does.
"""

import weakref

import numpy as np

from .api import aba, rnea
from .cpu import batch as cb
from .cpu import policy
from .cpu import single as cs
from .cpu.outputs import empty as _outputs
from .kernels.aza import AZA, AZA_MIN_BRANCH, DMM, mean_branch_ge_interpreted
from .kernels.jit import native_ref
from .configuration import integrate
from .declare import Function, caller_outputs
from .results import ABADerivatives, RNEADerivatives
from .validation import F64 as _F64
from .validation import ND as _ND
from .validation import gpu_call, no_forces, on_device

METHODS = ("idsva", "chain_rule", "complex_step", "finite_difference")
_ANALYTICAL = ("idsva", "chain_rule")
PRODUCTS = ("auto", "dmm", "aza")
_AUTO_AZA = weakref.WeakKeyDictionary()   # model -> product="auto" picks AZA
_AUTO_LAST = [None, DMM]                    # the last model asked about, and its answer
_CS_STEP = 1e-20                               # complex step: no cancellation, any tiny h
_FD_STEP = np.finfo(np.float64).eps ** (1 / 3)  # balances O(h^2) truncation and eps/h rounding
# compiled entries without Numba's type dispatch, for the fast paths: the state goes in
# unchecked, the entry checks it (jit.native_ref; False: not float64 1-D ndarrays)
_Q_V_U = (2, 3, 4)
_rnea_d_one = native_ref(cs.rnea_derivatives_one, "_rnea_d_one", globals(), _Q_V_U)
_aba_d_one = native_ref(cs.aba_derivatives_one, "_aba_d_one", globals(), _Q_V_U)
_rnea_cr_one = native_ref(cs.rnea_chain_rule_one, "_rnea_cr_one", globals(), _Q_V_U)
_aba_p_one = native_ref(cs.aba_derivatives_product_one, "_aba_p_one", globals(), _Q_V_U)
_aba_cr_one = native_ref(cs.aba_chain_rule_one, "_aba_cr_one", globals(), _Q_V_U)
# with fext (checked in the entry too: C-contiguous float64 2-D): stand-ins of their own (a
# native function is compiled for its first call's types, where fext is None)
_F = {5: 2}
_rnea_d_one_f = native_ref(cs.rnea_derivatives_one, "_rnea_d_one_f", globals(), _Q_V_U, _F)
_aba_d_one_f = native_ref(cs.aba_derivatives_one, "_aba_d_one_f", globals(), _Q_V_U, _F)
_rnea_cr_one_f = native_ref(cs.rnea_chain_rule_one, "_rnea_cr_one_f", globals(), _Q_V_U, _F)
_aba_p_one_f = native_ref(cs.aba_derivatives_product_one, "_aba_p_one_f", globals(), _Q_V_U,
                          _F)
_aba_cr_one_f = native_ref(cs.aba_chain_rule_one, "_aba_cr_one_f", globals(), _Q_V_U, _F)
_new = tuple.__new__      # NamedTuple from a tuple without its Python-level __new__
# batch entry pairs (serial, parallel): cpu.policy picks one per call
_RNEA_D_B = (cb.rnea_derivatives_batch, cb.rnea_derivatives_parallel)
_RNEA_CR_B = (cb.rnea_chain_rule_batch, cb.rnea_chain_rule_parallel)
_ABA_D_B = (cb.aba_derivatives_batch, cb.aba_derivatives_parallel)          # DMM product
_ABA_AZA_B = (cb.aba_derivatives_aza_batch, cb.aba_derivatives_aza_parallel)
_ABA_CR_B = (cb.aba_chain_rule_batch, cb.aba_chain_rule_parallel)
# the same pairs for the fast paths (float64 ndarrays): serial without type dispatch
_RNEA_D_F = policy.fast_pair(*_RNEA_D_B)
_RNEA_CR_F = policy.fast_pair(*_RNEA_CR_B)
_ABA_D_F = policy.fast_pair(*_ABA_D_B)
_ABA_AZA_F = policy.fast_pair(*_ABA_AZA_B)
_ABA_CR_F = policy.fast_pair(*_ABA_CR_B)


def _check_method(method):
    if method not in METHODS:
        raise ValueError(f"method: expected one of {', '.join(map(repr, METHODS))}, "
                         f"got {method!r}")


def _product_code(model, product):
    """aza.DMM or aza.AZA for the product keyword ("auto": the crossover, cached per model)."""
    if product == "auto":
        if model is _AUTO_LAST[0]:
            return _AUTO_LAST[1]
        code = _AUTO_AZA.get(model)
        if code is None:
            aza = mean_branch_ge_interpreted(model.mi, AZA_MIN_BRANCH)
            code = _AUTO_AZA[model] = AZA if aza else DMM
        _AUTO_LAST[0], _AUTO_LAST[1] = model, code
        return code
    if product == "dmm":
        return DMM
    if product == "aza":
        return AZA
    raise ValueError(f"product: expected one of {', '.join(map(repr, PRODUCTS))}, "
                     f"got {product!r}")


_IN_QVA = (("q", "nq"), ("v", "nv"), ("a", "nv"))
_IN_QVT = (("q", "nq"), ("v", "nv"), ("tau", "nv"))
_D3 = (("nv", "nv"),) * 3
# the general paths (declare.py); the entries allocate their own scratch and take their
# options (aba's product code) after the outputs
_RNEA_D = Function("rnea_derivatives", cs.rnea_derivatives_one, _RNEA_D_B, _IN_QVA, _D3,
                   fext=True, scratch="none", result=RNEADerivatives, options_last=True)
_RNEA_CR = Function("rnea_derivatives", cs.rnea_chain_rule_one, _RNEA_CR_B, _IN_QVA, _D3,
                    fext=True, scratch="none", result=RNEADerivatives, options_last=True,
                    variant="chain_rule")
_ABA_D = Function("aba_derivatives", cs.aba_derivatives_product_one, _ABA_D_B, _IN_QVT,
                  _D3, fext=True, scratch="none", result=ABADerivatives, options_last=True)
_ABA_AZA = Function("aba_derivatives", cs.aba_derivatives_product_one, _ABA_AZA_B,
                    _IN_QVT, _D3, fext=True, scratch="none", result=ABADerivatives,
                    options_last=True, variant="aza")
_ABA_CR = Function("aba_derivatives", cs.aba_chain_rule_one, _ABA_CR_B, _IN_QVT, _D3,
                   fext=True, scratch="none", result=ABADerivatives, options_last=True,
                   variant="chain_rule")


def _no_out(out, method):
    if out is not None:
        raise ValueError(f"out: method={method!r} computes new arrays; out= is for the "
                         "analytical methods ('idsva', 'chain_rule')")


# The single entries are tried for anything but an ndarray batch (B, nq), which would pay
# for three (nv, nv) outputs and an entry call first (~0.5 us, 8 % of panda's B = 4).
def _single(model, one, q, v, u, fext, extra=()):
    """The three (nv, nv) outputs of the natively bound single entry ``one`` (a fast path
    of jit.native_ref), or None: it took not the arguments (not float64 vectors, a batch)
    or refused them (ValueError; the general path then names why)."""
    s = model._svv
    d = (_empty(s), _empty(s), _empty(s))
    try:
        if one(model.mi, model.mf, q, v, u, fext, *d, *extra):
            return d
    except ValueError:
        pass
    return None


_empty = np.empty


def _fast_batch(q, v, u, fext):
    """The batch size B for the common batch call (float64 (B, n) ndarrays, no fext; the
    batch entries check the shapes), else None."""
    if (fext is None and type(q) is _ND and type(v) is _ND and type(u) is _ND
            and q.dtype is _F64 and v.dtype is _F64 and u.dtype is _F64
            and q.ndim == 2 and v.ndim == 2 and u.ndim == 2):
        return q.shape[0]
    return None


def _batch_into_out(model, batched, q, v, u, out, extra=()):
    """The fast batch pair into the caller's ``out`` (declare.caller_outputs' checks,
    without the declared path's validation of the inputs: the batch into out= lost to a
    loop at B = 4), or None: the general path then names what is wrong, inputs first."""
    s = (q.shape[0],) + model._svv
    try:
        a, b, c = caller_outputs(out, (s, s, s), _F64)
    except (TypeError, ValueError):
        return None
    try:
        policy.run(model, *batched, s[0], (model.mi, model.mf, q, v, u, no_forces(s[0]),
                                           a, b, c), extra)
    except ValueError:
        return None
    return (a, b, c)


def _batch_into_new(model, batched, q, v, u, extra=()):
    """The three (B, nv, nv) outputs of the fast batch pair ``batched`` (policy.fast_pair)
    on checked-type inputs, or None when the entry refuses them (the general path then
    names why)."""
    n = q.shape[0]
    s = (n,) + model._svv
    outs = _outputs((s, s, s))       # large ones without page faults (cpu/outputs.py)
    try:
        policy.run(model, *batched, n, (model.mi, model.mf, q, v, u, no_forces(n), *outs),
                   extra)
    except ValueError:
        return None
    return outs


def _stepped(model, fn, q, v, u, fext, method):
    """Jacobians of fn(model, q, v, u, fext) (nv,) w.r.t. q (tangent), v and u, each
    (nv, nv), by one batched call of fn over all perturbed states."""
    nv = model.nv
    E = np.eye(nv)
    if method == "complex_step":
        h = _CS_STEP
        Q = integrate(model, q, 1j * h * E)
        V = v + 1j * h * E
        U = u + 1j * h * E
        qs = np.concatenate([Q, np.broadcast_to(q, (2 * nv, q.size))]).astype(complex)
        vs = np.concatenate([np.broadcast_to(v, (nv, nv)), V, np.broadcast_to(v, (nv, nv))])
        us = np.concatenate([np.broadcast_to(u, (2 * nv, nv)), U])
        fs = None if fext is None else np.broadcast_to(fext, (3 * nv,) + fext.shape)
        out = fn(model, qs, vs, us, None if fs is None else fs.astype(complex)).imag / h
        return tuple(np.ascontiguousarray(out[k * nv:(k + 1) * nv].T) for k in range(3))
    hq = _FD_STEP
    hv = _FD_STEP * np.maximum(1.0, np.abs(v))
    hu = _FD_STEP * np.maximum(1.0, np.abs(u))
    D = np.concatenate([E, -E])                       # +h then -h for every coordinate
    qs = np.concatenate([integrate(model, q, hq * D), np.broadcast_to(q, (4 * nv, q.size))])
    vs = np.concatenate([np.broadcast_to(v, (2 * nv, nv)), v + hv * D,
                         np.broadcast_to(v, (2 * nv, nv))])
    us = np.concatenate([np.broadcast_to(u, (4 * nv, nv)), u + hu * D])
    fs = None if fext is None else np.broadcast_to(fext, (6 * nv,) + fext.shape)
    out = fn(model, qs, vs, us, fs)
    steps = (2 * hq * np.ones(nv), 2 * hv, 2 * hu)
    res = []
    for k in range(3):
        blk = out[2 * k * nv:2 * (k + 1) * nv]
        res.append(np.ascontiguousarray(((blk[:nv] - blk[nv:]) / steps[k][:, None]).T))
    return tuple(res)


def _numerical(model, fn, q, v, u, fext, method, names):
    """Complex-step / finite-difference Jacobians, looping over a leading batch axis."""
    q, v, u = (np.asarray(x, dtype=np.float64) for x in (q, v, u))
    f = None if fext is None else np.asarray(fext, dtype=np.float64)
    for name, x, n in zip(names, (q, v, u), (model.nq, model.nv, model.nv)):
        if x.ndim not in (1, 2) or x.shape[-1] != n:
            raise ValueError(f"{name}: expected shape ({n},) or (B, {n}), got {x.shape}")
    if q.ndim == 1:
        return _stepped(model, fn, q, v, u, f, method)
    per = [_stepped(model, fn, q[b], v[b], u[b], None if f is None else f[b], method)
           for b in range(q.shape[0])]
    return tuple(np.stack([p[k] for p in per]) for k in range(3))


def rnea_derivatives(model, q, v, a, fext=None, method="idsva", out=None):
    """Partial derivatives of inverse dynamics tau = ID(q, v, a, fext).

    q (nq,), v (nv,), a (nv,); fext (njoints, 6) spatial forces [linear, angular] on each
    joint's body in the joint's local frame, or None. Returns RNEADerivatives(dtau_dq,
    dtau_dv, dtau_da), each (nv, nv); dtau_dq is in the tangent space of q and
    dtau_da = M(q). A leading batch axis on every argument gives (B, nv, nv) outputs.

    method: "idsva" (default; Singh et al. 2022 Alg. 1, eqs. 30 and 32, O(N d)),
    "chain_rule" (Carpentier & Mansard 2018 Alg. 2 and 3, eqs. 11-14, world frame:
    motion and force sets carried through RNEA, O(N d); dtau_da by CRBA),
    "complex_step" (RNEA on complex128, q stepped as integrate(q, i h e_k)) or
    "finite_difference" (central differences, step eps^(1/3), on the manifold for q).

    out (analytical methods): three arrays (dtau_dq, dtau_dv, dtau_da) of the output
    shape and dtype, C-contiguous, to write into instead of allocating (for loops over
    large batches: fresh multi-megabyte outputs cost page faults on every call); on a
    GPU, device arrays. They are returned."""
    _check_method(method)
    if method not in _ANALYTICAL:
        _no_out(out, method)
        return RNEADerivatives(*_numerical(model, rnea, q, v, a, fext, method,
                                           ("q", "v", "a")))
    idsva = method == "idsva"
    if out is None and (type(q) is not _ND or q.ndim == 1):
        one = (_rnea_d_one if idsva else _rnea_cr_one) if fext is None else \
            (_rnea_d_one_f if idsva else _rnea_cr_one_f)
        d = _single(model, one, q, v, a, fext)
        if d is not None:
            return _new(RNEADerivatives, d)
    declared, fast_b = (_RNEA_D, _RNEA_D_F) if idsva else (_RNEA_CR, _RNEA_CR_F)
    if _fast_batch(q, v, a, fext) is not None:
        outs = (_batch_into_new(model, fast_b, q, v, a) if out is None
                else _batch_into_out(model, fast_b, q, v, a, out))
        if outs is not None:
            return _new(RNEADerivatives, outs)
    if on_device(q, v, a, fext):
        return gpu_call("rnea_derivatives", model, q, v, a, fext, method=method, out=out)
    return declared(model, q, v, a, fext=fext, out=out)


def aba_derivatives(model, q, v, tau, fext=None, method="idsva", product="auto", out=None):
    """Partial derivatives of forward dynamics qdd = FD(q, v, tau, fext).

    q (nq,), v (nv,), tau (nv,), fext (njoints, 6) local-frame forces or None. Returns
    ABADerivatives(dqdd_dq, dqdd_dv, dqdd_dtau), each (nv, nv) (dqdd_dq in the tangent
    space of q, dqdd_dtau = M^-1); a leading batch axis gives (B, nv, nv).

    method: "idsva" (default): qdd = ABA(q, v, tau), the ID derivatives at (q, v, qdd) by
    IDSVA, then dqdd/dq = -M^-1 dtau/dq and dqdd/dv = -M^-1 dtau/dv (Carpentier &
    Mansard 2018 eq. 24) with M^-1 computed without M; "chain_rule": the same with the
    ID derivatives by the RNEA chain rule (Carpentier & Mansard 2018 Alg. 2 and 3);
    "complex_step" (ABA on complex128) or "finite_difference" (central differences).

    product (analytical methods; the numerical ones ignore it): how -M^-1 dtau/du is
    formed. "dmm": dense rows of M^-1 times the tree-sparse columns of dtau/du; "aza":
    ABA with zero velocity and gravity, one column at a time, reusing the articulated
    inertias M^-1 already needed (Singh et al. 2022 sec. V-A); "auto" (default): AZA when
    the mean branch length of the tree reaches kernels.aza.AZA_MIN_BRANCH dofs (the
    measured crossover; on a serial chain the branch length is nv), DMM otherwise.
    M^-1 is returned either way, so AZA saves only the product.

    out (analytical methods): three arrays (dqdd_dq, dqdd_dv, dqdd_dtau) to write into,
    as in rnea_derivatives; they are returned."""
    _check_method(method)
    code = _product_code(model, product)
    if method not in _ANALYTICAL:
        _no_out(out, method)
        return ABADerivatives(*_numerical(model, aba, q, v, tau, fext, method,
                                          ("q", "v", "tau")))
    if method == "idsva" and code == DMM:
        if out is None and (type(q) is not _ND or q.ndim == 1):
            d = _single(model, _aba_d_one if fext is None else _aba_d_one_f, q, v, tau,
                        fext)
            if d is not None:
                return _new(ABADerivatives, d)
        declared, fast_b, fast = _ABA_D, _ABA_D_F, None
    elif method == "idsva":
        declared, fast_b, fast = _ABA_AZA, _ABA_AZA_F, "_aba_p_one"
    else:
        declared, fast_b, fast = _ABA_CR, _ABA_CR_F, "_aba_cr_one"
    extra = (code,)
    batch_extra = () if method == "idsva" else extra   # the idsva pairs are per product
    if _fast_batch(q, v, tau, fext) is not None:
        outs = (_batch_into_new(model, fast_b, q, v, tau, batch_extra) if out is None
                else _batch_into_out(model, fast_b, q, v, tau, out, batch_extra))
        if outs is not None:
            return _new(ABADerivatives, outs)
    if fast is not None and out is None and (type(q) is not _ND or q.ndim == 1):
        d = _single(model, globals()[fast if fext is None else fast + "_f"], q, v, tau,
                    fext, extra)
        if d is not None:
            return _new(ABADerivatives, d)
    if on_device(q, v, tau, fext):
        return gpu_call("aba_derivatives", model, q, v, tau, fext, method=method,
                    product=product, out=out)
    return declared(model, q, v, tau, fext=fext, options=extra, batch_options=batch_extra,
                    out=out)
