"""Single-call entry points (``*_one``): check one state, then call the kernel on the
caller's scratch (the dynamics: kernels.workspace.single_call_scratch, which the model
keeps) or on scratch allocated here (derivatives). Outputs are allocated by the caller
(the api layer): returning a Numba-allocated array to Python costs ~0.7 us, three times
a NumPy allocation. No algorithm math lives here."""

import numpy as np

from ..kernels.aba import aba
from ..kernels.aba_derivatives import aba_derivatives
from ..kernels.aza import AZA_WIDTH, aba_derivatives_aza, use_aza
from ..kernels.checks import all_finite, configuration_ok
from ..kernels.configuration import difference, integrate, neutral
from ..kernels.crba import crba
from ..kernels.fastargs import float64_vector
from ..kernels.fdsva_so import fdsva_so_routes
from ..kernels.fk import kinematics_pass
from ..kernels.idsva import IDSVA_WIDTH, idsva
from ..kernels.idsva_so import SC_SIZE, idsva_so
from ..kernels.jit import entry, fast_entry
from ..kernels.kinematics_derivatives import kinematics_derivatives
from ..kernels.minverse import minverse
from ..kernels.rnea import rnea
from ..kernels.rnea_chain_rule import (KIN_WIDTH, REC_WIDTH, aba_derivatives_chain_rule,
                                       record_offsets, rnea_chain_rule)
from ..kernels.workspace import W_WIDTH, workspace_rows
from .checks import (BAD_Q, BAD_SHAPE, BAD_STATE, configuration_checked, configurations_ok,
                     state_ok, tangent_ok, workspace_ok)

# ---- configuration space (fast entries: no scratch at all) -----------------------------


@fast_entry
def integrate_one(mi, q, v, qout):
    """qout (nq,) = q (+) v; q (nq,) a valid configuration, v (nv,) finite."""
    tangent_ok(mi, q, v, qout)
    integrate(mi, q, v, qout)


@fast_entry
def difference_one(mi, q0, q1, v):
    """v (nv,) = q1 (-) q0; q0, q1 (nq,) valid configurations."""
    configurations_ok(mi, q0, q1, v)
    difference(mi, q0, q1, v)


@fast_entry
def integrate_ref(mi, q, v, qout):
    """integrate_one for rbd.integrate's fast path: q and v arrive as any Python objects
    (kernels.fastargs.REF). Returns False, computing nothing, unless both are float64
    1-D ndarrays (a return value, not an exception: raising and catching one would cost
    the general path ~1.3 us); then True, or ValueError as integrate_one."""
    ok_q, q = float64_vector(q, qout)
    ok_v, v = float64_vector(v, qout)
    if not (ok_q and ok_v):
        return False
    tangent_ok(mi, q, v, qout)
    integrate(mi, q, v, qout)
    return True


@fast_entry
def difference_ref(mi, q0, q1, v):
    """difference_one for rbd.difference's fast path (q0, q1: kernels.fastargs.REF);
    True, or False when they are not float64 1-D ndarrays."""
    ok_0, q0 = float64_vector(q0, v)
    ok_1, q1 = float64_vector(q1, v)
    if not (ok_0 and ok_1):
        return False
    configurations_ok(mi, q0, q1, v)
    difference(mi, q0, q1, v)
    return True


@fast_entry
def neutral_one(mi, q):
    """q (nq,) = the neutral configuration."""
    if q.shape[0] != mi[0, 1]:
        raise ValueError(BAD_SHAPE)
    neutral(mi, q)


# ---- dynamics (fast entries: no Numba runtime, the model's scratch) --------------------


@fast_entry
def rnea_one(mi, mf, q, v, a, fext, ws, tau):
    """tau = RNEA; ws: (workspace_rows, W_WIDTH) scratch of q's dtype (as every *_one)."""
    state_ok(mi, q, v, a, fext)
    workspace_ok(mi, ws)
    rnea(mi, mf, q, v, a, fext, ws, tau)


@fast_entry
def crba_one(mi, mf, q, ws, M):
    configuration_checked(mi, q, ws)
    crba(mi, mf, q, ws, M)


@fast_entry
def aba_one(mi, mf, q, v, tau, fext, ws, qdd):
    state_ok(mi, q, v, tau, fext)
    workspace_ok(mi, ws)
    aba(mi, mf, q, v, tau, fext, ws, qdd)


@fast_entry
def minverse_one(mi, mf, q, ws, F, Minv):
    """Minv; F: (njoints+1, nv, 6) scratch of q's dtype."""
    configuration_checked(mi, q, ws)
    if F.shape[0] < mi[0, 0] + 1 or F.shape[1] < mi[0, 2]:
        raise ValueError("F: too small")
    minverse(mi, mf, q, ws, F, Minv)


@entry
def kinematics_one(mi, mf, q, v, a, ws):
    """Fill ws (workspace_rows x W_WIDTH) with world placements, S, v and a (with -g)."""
    if not configuration_ok(mi, q):
        raise ValueError(BAD_Q)
    if not (all_finite(v) and all_finite(a)):
        raise ValueError(BAD_STATE)
    kinematics_pass(mi, mf, q, v, a, ws)


# ---- first-order derivatives (IDSVA, FDSVA; chain rule; AZA product; kinematics) -------


@entry
def rnea_derivatives_one(mi, mf, q, v, a, fext, dq, dv, da):
    state_ok(mi, q, v, a, fext)
    ws = np.empty((workspace_rows(mi), IDSVA_WIDTH), q.dtype)
    idsva(mi, mf, q, v, a, fext, ws, dq, dv, da)


@entry
def aba_derivatives_one(mi, mf, q, v, tau, fext, dq, dv, dtau):
    state_ok(mi, q, v, tau, fext)
    nv = mi[0, 2]
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    qdd = np.empty(nv, q.dtype)
    S3 = np.empty((3, nv, nv), q.dtype)
    F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
    aba_derivatives(mi, mf, q, v, tau, fext, ws, qdd, S3, F, dq, dv, dtau)


@entry
def rnea_chain_rule_one(mi, mf, q, v, a, fext, dq, dv, da):
    state_ok(mi, q, v, a, fext)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    off = np.empty(mi[0, 0] + 2, np.int64)
    G = np.empty((record_offsets(mi, off), REC_WIDTH), q.dtype)
    rnea_chain_rule(mi, mf, q, v, a, fext, ws, G, off, dq, dv, da)


@entry
def aba_derivatives_product_one(mi, mf, q, v, tau, fext, dq, dv, dtau, product):
    """IDSVA FD derivatives with the eq. 24 product chosen by ``product`` (aza.AUTO, DMM
    or AZA)."""
    state_ok(mi, q, v, tau, fext)
    nv = mi[0, 2]
    aza = use_aza(mi, product)
    ws = np.empty((workspace_rows(mi), AZA_WIDTH if aza else W_WIDTH), q.dtype)
    qdd = np.empty(nv, q.dtype)
    S3 = np.empty((3, nv, nv), q.dtype)
    F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
    if aza:
        aba_derivatives_aza(mi, mf, q, v, tau, fext, ws, qdd, S3, F, dq, dv, dtau)
    else:
        aba_derivatives(mi, mf, q, v, tau, fext, ws, qdd, S3, F, dq, dv, dtau)


@entry
def aba_chain_rule_one(mi, mf, q, v, tau, fext, dq, dv, dtau, product):
    state_ok(mi, q, v, tau, fext)
    nv = mi[0, 2]
    aza = use_aza(mi, product)
    ws = np.empty((workspace_rows(mi), AZA_WIDTH if aza else W_WIDTH), q.dtype)
    off = np.empty(mi[0, 0] + 2, np.int64)
    G = np.empty((record_offsets(mi, off), REC_WIDTH), q.dtype)
    qdd = np.empty(nv, q.dtype)
    S3 = np.empty((3, nv, nv), q.dtype)
    F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
    aba_derivatives_chain_rule(mi, mf, q, v, tau, fext, ws, G, off, qdd, S3, F, dq, dv, dtau,
                               aza)


@entry
def kinematics_derivatives_one(mi, mf, q, v, a, reference, dvq, dvv, daq, dav, daa):
    state_ok(mi, q, v, a, None)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    off = np.empty(mi[0, 0] + 2, np.int64)
    G = np.empty((record_offsets(mi, off), KIN_WIDTH), q.dtype)
    kinematics_derivatives(mi, mf, q, v, a, reference, ws, G, off, dvq, dvv, daq, dav, daa)


# ---- second-order derivatives (IDSVA-SO, FDSVA-SO) -------------------------------------


@entry
def rnea_second_order_one(mi, mf, q, v, a, fext, Q, V, X, D):
    state_ok(mi, q, v, a, fext)
    ws = np.empty((workspace_rows(mi), IDSVA_WIDTH), q.dtype)
    sc = np.empty(SC_SIZE, q.dtype)
    idsva_so(mi, mf, q, v, a, fext, ws, sc, Q, V, X, D)


@entry
def aba_second_order_one(mi, mf, q, v, tau, fext, dQ, dV, dX, dT, inner, outer):
    """FDSVA-SO with the routes inner (fdsva_so.AUTO, DTM, IDFOZA) and outer (AUTO,
    DENSE, AZA)."""
    state_ok(mi, q, v, tau, fext)
    nv = mi[0, 2]
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    sc = np.empty(SC_SIZE, q.dtype)
    qdd = np.empty(nv, q.dtype)
    lam = np.empty(nv, np.int64)
    Mt = np.empty((7, nv, nv), q.dtype)
    F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
    T = np.empty((5, nv, nv, nv), q.dtype)
    fdsva_so_routes(mi, mf, q, v, tau, fext, ws, sc, qdd, lam, Mt, F, T, dQ, dV, dX, dT,
                    inner, outer)
