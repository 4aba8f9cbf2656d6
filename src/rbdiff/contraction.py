"""Second-order derivatives of inverse and forward dynamics contracted with a costate,
computed without forming a tensor (issue 27; kernels/contraction.py derives the O(N d)
recursion from IDSVA-SO and FDSVA-SO, Singh, Russell & Wensing 2023; the contraction
is the idea of Nganga & Wensing, RA-L 2021).

``rnea_second_order_contraction(model, q, v, a, lam)`` equals
``np.einsum("i,ijk->jk", lam, T)`` for each tensor T of
``rnea_second_order_derivatives(model, q, v, a)``, and
``aba_second_order_contraction(model, q, v, tau, lam)`` the same for
``aba_second_order_derivatives``: the Hessian blocks of the scalar lam^T ID or lam^T FD
(q in the tangent space), which is what DDP's backward pass needs of the dynamics. Each
costs O(N d) (O(N^2) on a serial chain) instead of the tensors' O(N d^2) work and
O(nv^3) memory.
"""

import numpy as np

from .cpu import contact_contraction as ccc
from .cpu import contraction as cc
from .cpu.scratch import thread_workspace as _thread_ws
from .declare import Function
from .declare import single_f64 as _single_f64
from .results import (ABASecondOrderContraction, ContactDynamicsContraction,
                      ImpulseDynamicsContraction, RNEASecondOrderContraction)
from .second_order import _fast as _so_fast
from .validation import F64 as _F64
from .validation import ND as _ND

_rnea_one, _aba_one = cc.rnea_contraction_one, cc.aba_contraction_one
_new = tuple.__new__

_M4 = (("nv", "nv"),) * 4
# the four matrices of one call are views of one block (4, nv, nv) (or (4, B, nv, nv))
_RNEA_C = Function("rnea_second_order_contraction", cc.rnea_contraction_one,
                   (cc.rnea_contraction_batch, cc.rnea_contraction_parallel),
                   (("q", "nq"), ("v", "nv"), ("a", "nv"), ("lam", "nv")), _M4, fext=True,
                   scratch="none", result=RNEASecondOrderContraction, options_last=True,
                   block=True)


_ABA_C = Function("aba_second_order_contraction", cc.aba_contraction_one,
                  (cc.aba_contraction_batch, cc.aba_contraction_parallel),
                  (("q", "nq"), ("v", "nv"), ("tau", "nv"), ("lam", "nv")), _M4, fext=True,
                  scratch="none", result=ABASecondOrderContraction, options_last=True,
                  block=True)


def _fast_call(one, result, model, q, v, u, lam, fext):
    """The entry ``one`` straight on the common case (second_order's: one state, float64
    NumPy vectors, no fext; lam too), or None for the declared path, which names a
    refused input. The declared path costs ~10 us more, as much as the whole contraction
    on a 7-dof arm."""
    if not (_so_fast(q, v, u, fext) and type(lam) is _ND and lam.dtype is _F64
            and lam.ndim == 1):
        return None
    nv = model.nv
    out = np.empty((4, nv, nv))
    t = out[0], out[1], out[2], out[3]
    try:
        one(model.mi, model.mf, q, v, u, lam, None, *t)
    except ValueError:
        return None
    return _new(result, t)


def rnea_second_order_contraction(model, q, v, a, lam, fext=None):
    """Second-order derivatives of inverse dynamics contracted with a costate lam.

    q (nq,), v (nv,), a (nv,), lam (nv,); fext (njoints, 6) spatial forces [linear,
    angular] on each joint's body in the joint's local frame, or None. Returns
    RNEASecondOrderContraction(d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq), each (nv, nv):
    ``np.einsum("i,ijk->jk", lam, T)`` for the tensor T of the same name that
    rnea_second_order_derivatives returns, i.e. with P = lam^T tau(q, v, a):
    d2tau_dq2[j, k] = d^2 P / dq_j dq_k (tangent space, the derivative along q_k of
    lam^T dtau_dq[:, j]), d2tau_dv2 = d^2 P / dv^2, d2tau_dqdv[j, k] = d^2 P / dq_j dv_k,
    dM_dq[j, k] = sum_i lam_i dM_ij / dq_k = d^2 P / da_j dq_k.

    Computed in O(N d) (N joints, d depth; O(N^2) on a chain) by summing IDSVA-SO's
    entries (Singh et al. 2023, Appendix C) over the output index inside the recursion
    (kernels/contraction.py), never forming a tensor. A leading batch axis on every
    argument gives (B, nv, nv) matrices."""
    got = _fast_call(_rnea_one, RNEASecondOrderContraction, model, q, v, a, lam, fext)
    return _RNEA_C(model, q, v, a, lam, fext=fext) if got is None else got


def aba_second_order_contraction(model, q, v, tau, lam, fext=None):
    """Second-order derivatives of forward dynamics contracted with a costate lam.

    q (nq,), v (nv,), tau (nv,), lam (nv,); fext (njoints, 6) local-frame forces or None.
    Returns ABASecondOrderContraction(d2qdd_dq2, d2qdd_dv2, d2qdd_dqdv, d2qdd_dtaudq),
    each (nv, nv): ``np.einsum("i,ijk->jk", lam, T)`` for the tensor T of the same name
    that aba_second_order_derivatives returns, i.e. with P = lam^T qdd(q, v, tau):
    d2qdd_dq2 = d^2 P / dq^2 (tangent space), d2qdd_dv2 = d^2 P / dv^2,
    d2qdd_dqdv[j, k] = d^2 P / dq_j dv_k, d2qdd_dtaudq[j, k] = d^2 P / dtau_j dq_k
    (P is affine in tau). The blocks of the Hessian of P in (q, v, tau) that DDP needs.

    FDSVA-SO (Singh et al. 2023 eq. 46) contracted: with qdd = ABA(q, v, tau),
    mu = M^-1 lam and C_Q, C_V, C_X, C_D the inverse-dynamics contraction at
    (q, v, qdd) and mu, the results are -(C_Q + P^T C_D + C_D^T P), -C_V,
    -(C_X + C_D^T Pv) and -M^-1 C_D, P = dqdd/dq and Pv = dqdd/dv; O(N d) plus
    aba_derivatives' products. A leading batch axis gives (B, nv, nv)."""
    got = _fast_call(_aba_one, ABASecondOrderContraction, model, q, v, tau, lam, fext)
    return _ABA_C(model, q, v, tau, lam, fext=fext) if got is None else got


# ---- contact dynamics ----------------------------------------------------------------------

def _contact_errors():
    from .contacts import _errors
    e = _errors()
    e[ccc.BAD_COSTATE] = lambda model: ValueError(ccc.BAD_COSTATE)
    return e


_CONTACT_C = Function(
    "contact_dynamics_contraction", ccc.contact_contraction_one,
    (ccc.contact_contraction_batch, ccc.contact_contraction_parallel),
    (("q", "nq"), ("v", "nv"), ("tau", "nv"), ("lam_a", "nv"), ("lam_f", "nc")), _M4,
    model_args="frames", result=ContactDynamicsContraction, block=True, sizes=("nc",),
    errors=_contact_errors())


def _vectors(*xs):
    """True when every x is a float64 C-contiguous NumPy vector (the declared path's
    single float64 call passes the same types: one compiled specialisation for both)."""
    for x in xs:
        if not (type(x) is _ND and x.dtype is _F64 and x.ndim == 1
                and x.flags.c_contiguous):
            return False
    return True


def _contact_fast(one, result, count, model, xs, contacts, options):
    """``one`` on one float64 state through declare.single_f64 (no type dispatch), the
    model's workspace and one output block; None for the declared path (a batch, another
    dtype, no contacts, a refused input: it names the error). The declared path costs
    ~10 us more a call (validation, broadcasting, dispatch)."""
    if not _vectors(*xs):
        return None
    from .contacts import pack
    cint, cflt, nc = pack(model, contacts)
    if nc == 0 or xs[-1].shape[0] != nc:
        return None
    nv = model.nv
    out = np.empty((count, nv, nv))
    t = tuple(out[k] for k in range(count))
    try:
        _single_f64(one, (model.mi, model.mf, model.frame_parents, model.frame_mf, *xs, cint,
                          cflt, *options, _thread_ws(model), *t))
    except ValueError:
        return None
    return _new(result, t)


def contact_dynamics_contraction(model, q, v, tau, contacts, lam_a, lam_f, damping=0.0):
    """Second derivatives of contact dynamics contracted with a costate (lam_a, lam_f).

    q (nq,), v (nv,), tau (nv,), ``contacts`` as contact_dynamics', lam_a (nv,), lam_f
    (nc,) (one per contact row, in the order and reference of the forces that
    contact_dynamics returns), ``damping`` as contact_dynamics'. Returns
    ContactDynamicsContraction(d2_dq2, d2_dv2, d2_dqdv, d2_dtau_dq), each (nv, nv): the
    Hessian blocks of P = lam_a . qdd + lam_f . forces in (q, v, tau), q in the tangent
    space, in the layout of aba_second_order_contraction: d2_dq2[j, k] = d2P/dq_j dq_k
    (the derivative along q_k of dP/dq_j), d2_dv2, d2_dqdv[j, k] = d2P/dq_j dv_k,
    d2_dtau_dq[j, k] = d2P/dtau_j dq_k. The tau-tau and tau-v blocks are zero: the
    solution is affine in tau with a slope (the KKT inverse's blocks) that depends on q
    alone.

    Computed without tensors (kernels/contact_contraction.py): the adjoint of the KKT
    system (mu, nu), the RNEA contraction at (q, v, qdd) with mu and the contact forces
    as external forces, each contact frame's acceleration and Baumgarte terms
    contracted with nu (O(d^2) per contact of support depth d), and the products of the
    first-order derivatives with the q-derivative of the KKT matrix times (mu, nu):
    H = L_xx + L_xy y_x + y_x^T L_yx. Point and surface contacts, LOCAL and
    LOCAL_WORLD_ALIGNED, Baumgarte gains (a surface contact's kp through the exact
    Hessian of log6). A leading batch axis on q, v, tau, lam_a and
    lam_f gives (B, nv, nv) blocks."""
    if type(damping) is float:
        got = _contact_fast(ccc.contact_contraction_one, ContactDynamicsContraction, 4, model,
                            (q, v, tau, lam_a, lam_f), contacts, (damping,))
        if got is not None:
            return got
    from .contacts import DependentContacts, _number, _raise_dependent, pack
    from .cpu import contacts as _cc
    cint, cflt, nc = pack(model, contacts)
    d = _number(damping, "damping", _cc.BAD_DAMPING)
    if nc == 0:
        return ContactDynamicsContraction(*aba_second_order_contraction(model, q, v, tau,
                                                                        lam_a))
    try:
        return _CONTACT_C(model, q, v, tau, lam_a, lam_f, options=(cint, cflt, d),
                          sizes={"nc": nc})
    except DependentContacts as e:
        _raise_dependent(e, model, q, contacts, d)


# ---- impulse dynamics ----------------------------------------------------------------------

_IMPULSE_C = Function(
    "impulse_dynamics_contraction", ccc.impulse_contraction_one,
    (ccc.impulse_contraction_batch, ccc.impulse_contraction_parallel),
    (("q", "nq"), ("v_before", "nv"), ("lam_v", "nv"), ("lam_f", "nc")), _M4[:2],
    model_args="frames", result=ImpulseDynamicsContraction, block=True, sizes=("nc",),
    errors=_contact_errors())


def impulse_dynamics_contraction(model, q, v_before, contacts, lam_v, lam_f, restitution=0.0,
                                 damping=0.0):
    """Second derivatives of impulse dynamics contracted with a costate (lam_v, lam_f).

    q (nq,), v_before (nv,), ``contacts``, ``restitution`` and ``damping`` as
    impulse_dynamics', lam_v (nv,), lam_f (nc,) (one per contact row, in the order and
    reference of the impulses that impulse_dynamics returns). Returns
    ImpulseDynamicsContraction(d2_dq2, d2_dqdv), each (nv, nv): the Hessian blocks of
    P = lam_v . v_after + lam_f . impulses in (q, v_before), q in the tangent space, in
    the layout of contact_dynamics_contraction: d2_dq2[j, k] = d2P/dq_j dq_k (the
    derivative along q_k of dP/dq_j), d2_dqdv[j, k] = d2P/dq_j dv_before_k. The
    v_before-v_before block is zero: v_after and the impulses are linear in v_before,
    with a slope (the KKT inverse applied to [M ; -r J]) that depends on q alone.

    Computed without tensors (kernels/contact_contraction.py): the adjoint of the impulse
    KKT system (mu, nu; the contact case's), the RNEA contraction at v = 0, a = v_after -
    v_before without gravity with mu and the impulses as external forces, each contact
    frame's velocity J(q) (v_after + restitution v_before) contracted with nu (O(d^2)
    per contact of support depth d, one dot product a pair of dofs), and the products of
    the first-order derivatives (impulse_dynamics_derivatives') with the q-derivative of
    the KKT matrix times (mu, nu). Point and surface contacts, LOCAL and
    LOCAL_WORLD_ALIGNED. A leading batch axis on q, v_before, lam_v and lam_f gives
    (B, nv, nv) blocks."""
    if type(restitution) is float and type(damping) is float:
        got = _contact_fast(ccc.impulse_contraction_one, ImpulseDynamicsContraction, 2, model,
                            (q, v_before, lam_v, lam_f), contacts, (restitution, damping))
        if got is not None:
            return got
    from .contacts import (DependentContacts, _number, _raise_dependent, _restitution,
                           impulse_dynamics_derivatives, pack)
    from .cpu import contacts as _cc
    cint, cflt, nc = pack(model, contacts)
    r = _restitution(restitution)
    d = _number(damping, "damping", _cc.BAD_DAMPING)
    if nc == 0:         # v_after = v_before, no impulses: P is linear in v_before
        z = impulse_dynamics_derivatives(model, q, v_before, contacts).dvafter_dq
        return ImpulseDynamicsContraction(z, z.copy())
    try:
        return _IMPULSE_C(model, q, v_before, lam_v, lam_f, options=(cint, cflt, r, d),
                          sizes={"nc": nc})
    except DependentContacts as e:
        _raise_dependent(e, model, q, contacts, d)
