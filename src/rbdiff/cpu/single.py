"""Single-call entry points (``*_one``): check one state, then call the kernel on the
caller's scratch (the dynamics, kinematics and frames: cpu/scratch.py, which gives each
model its float64 pair) or on scratch allocated here (the other derivatives). Outputs
are allocated by the caller (the api layer): returning a Numba-allocated array to Python costs ~0.7 us, three times
a NumPy allocation. No algorithm math lives here."""

import numpy as np

from ..kernels.aba import aba
from ..kernels.aba_derivatives import aba_derivatives
from ..kernels.aza import AZA_WIDTH, aba_derivatives_aza, use_aza
from ..kernels.configuration import difference, integrate, neutral
from ..kernels.crba import crba
from ..kernels.fastargs import made, made3, missed, output_arg, state_args, vector_arg
from ..kernels.fdsva_so import fdsva_so_products, uses_idfoza
from ..kernels.frames import (forward_kinematics, frame_jacobian, frame_placement,
                              frame_placements)
from ..kernels.idsva import IDSVA_WIDTH, idsva
from ..kernels.idsva_so import SC_SIZE, idsva_so
from ..kernels.jit import entry, fast_entry
from ..kernels.fk import kinematics_pass
from ..kernels.kinematics_derivatives import (derivatives_of_state, joint_derivatives,
                                              kinematics_derivatives,
                                              kinematics_derivatives_of_joint)
from ..kernels.minverse import minverse
from ..kernels.rnea import gravity, nonlinear_effects, rnea
from ..kernels.rnea_chain_rule import (REC_WIDTH, aba_derivatives_chain_rule, record_offsets,
                                       rnea_chain_rule)
from ..kernels.workspace import W_WIDTH, workspace_rows
from .pieces import aba_derivatives_piece, fdsva_so_products_piece, fdsva_so_terms_piece
from .twin import ahead, twin_later
from .checks import (BAD_SHAPE, configuration_checked, dynamics_finite, frame_ok, joint_ok,
                     minverse_finite, outputs_fit, pair_ok, reference_ok, state_ok,
                     state_width_ok, tangent_ok, velocity_state_ok, workspace_ok)

# ---- configuration space (fast entries: no scratch at all) -----------------------------


@fast_entry
def integrate_one(mi, q, v, qout):
    """qout (nq,) = q (+) v; q (nq,) a valid configuration, v (nv,) finite. On
    rbd.integrate's fast path q and v arrive as any Python objects (kernels.fastargs.REF):
    False, computing nothing, unless both are float64 1-D ndarrays (a return value, not
    an exception: raising and catching one would cost the general path ~1.3 us); True
    when done. qout given as its shape is made here (kernels.fastargs.output_arg), and
    the result is then qout, or None instead of False."""
    ok, q, v, _, _ = state_args(q, v, None, None, None)
    if not ok:
        return missed(qout)
    tangent_ok(mi, q, v, q)     # checks that raise come before an output is made
    obj, out = output_arg(qout)
    outputs_fit(out.shape[0] == mi[0, 1], obj)
    integrate(mi, q, v, out)
    return made(obj)


@fast_entry
def difference_one(mi, q0, q1, v):
    """v (nv,) = q1 (-) q0; q0, q1 (nq,) valid configurations (or REF objects, as
    integrate_one's)."""
    ok, q0, q1, _, _ = state_args(q0, q1, None, None, None)
    if not ok:
        return missed(v)
    pair_ok(mi, q0, q1)         # v's length: checked once it exists
    obj, out = output_arg(v)
    outputs_fit(out.shape[0] == mi[0, 2], obj)
    difference(mi, q0, q1, out)
    return made(obj)


@fast_entry
def neutral_one(mi, q):
    """q (nq,) = the neutral configuration."""
    if q.shape[0] != mi[0, 1]:
        raise ValueError(BAD_SHAPE)
    neutral(mi, q)


# ---- dynamics (fast entries: no Numba runtime, the model's scratch) --------------------


# The dynamics entries take their state as arrays (the declared path) or, on the api
# layer's fast paths, as any objects (kernels.fastargs.REF, bound by jit.native_ref):
# then they return False, computing nothing, unless q, v, a / tau are float64 1-D
# ndarrays and fext a C-contiguous float64 2-D one; True when done.


@fast_entry
def rnea_one(mi, mf, q, v, a, fext, ws, tau):
    """tau = RNEA; ws: (workspace_rows, W_WIDTH) scratch of q's dtype (as every *_one)."""
    ok, q, v, a, fext = state_args(q, v, a, fext, None)
    if not ok:
        return missed(tau)
    state_ok(mi, q, v, a, fext)
    workspace_ok(mi, ws)
    obj, out = output_arg(tau)
    rnea(mi, mf, q, v, a, fext, ws, out)
    return made(obj)


@fast_entry
def crba_one(mi, mf, q, ws, M):
    """M (nv, nv), or its shape (as frame_placement_one's)."""
    ok_q, q = vector_arg(q, None)
    if not ok_q:
        return missed(M)
    configuration_checked(mi, q, ws)
    obj, out = output_arg(M)
    crba(mi, mf, q, ws, out)
    return made(obj)


@fast_entry
def aba_one(mi, mf, q, v, tau, fext, ws, qdd):
    ok, q, v, tau, fext = state_args(q, v, tau, fext, None)
    if not ok:
        return missed(qdd)
    state_ok(mi, q, v, tau, fext)
    workspace_ok(mi, ws)
    obj, out = output_arg(qdd)
    aba(mi, mf, q, v, tau, fext, ws, out)
    dynamics_finite(out, obj)
    return made(obj)


@fast_entry
def minverse_one(mi, mf, q, ws, F, Minv):
    """Minv; F: (njoints, nv, 6) scratch of q's dtype."""
    ok_q, q = vector_arg(q, None)
    if not ok_q:
        return missed(Minv)
    configuration_checked(mi, q, ws)
    if F.shape[0] < mi[0, 0] + 1 or F.shape[1] < mi[0, 2]:
        raise ValueError("F: too small")
    obj, out = output_arg(Minv)
    minverse(mi, mf, q, ws, F, out)
    minverse_finite(out, obj)
    return made(obj)


@fast_entry
def gravity_one(mi, mf, q, ws, tau):
    ok_q, q = vector_arg(q, None)
    if not ok_q:
        return missed(tau)
    configuration_checked(mi, q, ws)
    obj, out = output_arg(tau)
    gravity(mi, mf, q, ws, out)
    return made(obj)


@fast_entry
def nonlinear_effects_one(mi, mf, q, v, ws, tau):
    ok_q, q = vector_arg(q, None)
    ok_v, v = vector_arg(v, None)
    if not (ok_q and ok_v):
        return missed(tau)
    velocity_state_ok(mi, q, v)
    workspace_ok(mi, ws)
    obj, out = output_arg(tau)
    nonlinear_effects(mi, mf, q, v, ws, out)
    return made(obj)


# ---- kinematics and frames (fast entries on the model's scratch) -----------------------
# (their state and its fast-path REF objects as the dynamics entries')


@fast_entry
def forward_kinematics_one(mi, mf, q, v, a, ws, oMi, vel, acc, result=None):
    """oMi and, unless None, local velocities vel (v given) and accelerations acc (v and a
    given). q, v, a as rnea_one's (None where not given). Outputs given as shapes are
    made here (kernels.fastargs.output_arg): the result is then their tuple, of the
    named tuple class ``result`` where given (a REF)."""
    ok, qq, vv, aa, _ = state_args(q, v, a, None, None)
    if not ok:
        return missed(oMi)
    if v is None:       # the arguments, not vv, aa: Numba prunes these branches by type
        configuration_checked(mi, qq, ws)
    elif a is None:
        velocity_state_ok(mi, qq, vv)
        workspace_ok(mi, ws)
    else:
        state_ok(mi, qq, vv, aa, None)
        workspace_ok(mi, ws)
    o_T, T = output_arg(oMi)
    o_v, V = output_arg(vel)
    o_a, A = output_arg(acc)
    forward_kinematics(mi, mf, qq, vv, aa, ws, T, V, A)
    return made3(o_T, o_v, o_a, result)


@fast_entry
def frame_placement_one(mi, mf, fparent, fmf, q, frame, ws, T):
    """T (4, 4), or its shape (made here: the result is then T)."""
    ok, q = vector_arg(q, None)
    if not ok:
        return missed(T)
    configuration_checked(mi, q, ws)
    frame_ok(fparent, frame)
    obj, out = output_arg(T)
    frame_placement(mi, mf, fparent, fmf, q, frame, ws, out)
    return made(obj)


@fast_entry
def frame_placements_one(mi, mf, fparent, fmf, q, ws, T):
    """T (nframes, 4, 4), or its shape (as frame_placement_one's)."""
    ok, q = vector_arg(q, None)
    if not ok:
        return missed(T)
    configuration_checked(mi, q, ws)
    obj, out = output_arg(T)
    frame_placements(mi, mf, fparent, fmf, q, ws, out)
    return made(obj)


@fast_entry
def frame_jacobian_one(mi, mf, fparent, fmf, q, frame, reference, ws, J):
    """J (6, nv) in ``reference`` (kinematics_derivatives' WORLD, LOCAL,
    LOCAL_WORLD_ALIGNED), or its shape (as frame_placement_one's)."""
    ok, q = vector_arg(q, None)
    if not ok:
        return missed(J)
    configuration_checked(mi, q, ws)
    frame_ok(fparent, frame)
    reference_ok(reference)
    obj, out = output_arg(J)
    frame_jacobian(mi, mf, fparent, fmf, q, frame, reference, ws, out)
    return made(obj)


@fast_entry
def kinematics_derivatives_one(mi, mf, q, v, a, reference, ws, dvq, dvv, daq, dav, daa):
    ok, q, v, a, _ = state_args(q, v, a, None, dvq)
    if not ok:
        return False
    state_ok(mi, q, v, a, None)
    workspace_ok(mi, ws)
    reference_ok(reference)
    kinematics_derivatives(mi, mf, q, v, a, reference, ws, dvq, dvv, daq, dav, daa)
    return True


@fast_entry
def kinematics_state_one(mi, mf, q, v, a, st):
    """st (workspace_rows, >= STATE_WIDTH): the kinematics state the getters below read
    (Pinocchio's computeForwardKinematicsDerivatives)."""
    ok, q, v, a, _ = state_args(q, v, a, None, st)
    if not ok:
        return False
    state_ok(mi, q, v, a, None)
    state_width_ok(mi, st)
    kinematics_pass(mi, mf, q, v, a, st)
    return True


@fast_entry
def derivatives_of_state_one(mi, mf, reference, st, dvq, dvv, daq, dav, daa):
    """Every joint's derivatives (each (njoints, 6, nv)) from kinematics_state_one's st."""
    state_width_ok(mi, st)
    reference_ok(reference)
    derivatives_of_state(mi, mf, reference, st, dvq, dvv, daq, dav, daa)


@fast_entry
def joint_derivatives_of_state_one(mi, mf, joint, reference, st, dvq, dvv, daq, dav, daa):
    """Joint ``joint``'s five (6, nv) derivatives from kinematics_state_one's st."""
    state_width_ok(mi, st)
    joint_ok(mi, joint)
    reference_ok(reference)
    joint_derivatives(mi, mf, joint, reference, st, dvq, dvv, daq, dav, daa)


@fast_entry
def joint_kinematics_derivatives_one(mi, mf, q, v, a, joint, reference, ws,
                                     dvq, dvv, daq, dav, daa):
    """The five (6, nv) derivatives of one joint (1..njoints-1)."""
    ok, q, v, a, _ = state_args(q, v, a, None, dvq)
    if not ok:
        return False
    state_ok(mi, q, v, a, None)
    workspace_ok(mi, ws)
    joint_ok(mi, joint)
    reference_ok(reference)
    kinematics_derivatives_of_joint(mi, mf, q, v, a, joint, reference, ws,
                                    dvq, dvv, daq, dav, daa)
    return True


# ---- first-order derivatives (IDSVA, FDSVA; chain rule; AZA product; kinematics) -------


@entry
def rnea_derivatives_one(mi, mf, q, v, a, fext, dq, dv, da):
    ok, q, v, a, fext = state_args(q, v, a, fext, dq)
    if not ok:
        return False
    state_ok(mi, q, v, a, fext)
    ws = np.empty((workspace_rows(mi), IDSVA_WIDTH), q.dtype)
    idsva(mi, mf, q, v, a, fext, ws, dq, dv, da)
    return True


@entry
def aba_derivatives_one(mi, mf, q, v, tau, fext, dq, dv, dtau):
    ok, q, v, tau, fext = state_args(q, v, tau, fext, dq)
    if not ok:
        return False
    state_ok(mi, q, v, tau, fext)
    nv = mi[0, 2]
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    qdd = np.empty(nv, q.dtype)
    S3 = np.empty((3, nv, nv), q.dtype)
    F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
    # kernels.aba_derivatives' passes, the second by address (cpu/pieces.py): on a cold
    # cache it compiles in a background child meanwhile
    ahead(aba_derivatives_piece, (mi, mf, v, fext, ws, S3, F, dq, dv, dtau))
    aba(mi, mf, q, v, tau, fext, ws, qdd)
    twin_later(aba_derivatives_piece, (mi, mf, v, fext, ws, S3, F, dq, dv, dtau))
    dynamics_finite(qdd)
    return True


@entry
def rnea_chain_rule_one(mi, mf, q, v, a, fext, dq, dv, da):
    ok, q, v, a, fext = state_args(q, v, a, fext, dq)
    if not ok:
        return False
    state_ok(mi, q, v, a, fext)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    off = np.empty(mi[0, 0] + 2, np.int64)
    G = np.empty((record_offsets(mi, off), REC_WIDTH), q.dtype)
    rnea_chain_rule(mi, mf, q, v, a, fext, ws, G, off, dq, dv, da)
    return True


@entry
def aba_derivatives_product_one(mi, mf, q, v, tau, fext, dq, dv, dtau, product):
    """IDSVA FD derivatives with the eq. 24 product chosen by ``product`` (aza.AUTO, DMM
    or AZA)."""
    ok, q, v, tau, fext = state_args(q, v, tau, fext, dq)
    if not ok:
        return False
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
    dynamics_finite(qdd)
    return True


@entry
def aba_chain_rule_one(mi, mf, q, v, tau, fext, dq, dv, dtau, product):
    ok, q, v, tau, fext = state_args(q, v, tau, fext, dq)
    if not ok:
        return False
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
    dynamics_finite(qdd)
    return True


# ---- second-order derivatives (IDSVA-SO, FDSVA-SO) -------------------------------------


@entry
def rnea_second_order_one(mi, mf, q, v, a, fext, Q, V, X, D):
    state_ok(mi, q, v, a, fext)
    ws = np.empty((workspace_rows(mi), IDSVA_WIDTH), q.dtype)
    sc = np.empty(SC_SIZE, q.dtype)
    idsva_so(mi, mf, q, v, a, fext, ws, sc, Q, V, X, D)


@entry
def aba_second_order_one(mi, mf, q, v, tau, fext, dQ, dV, dX, dT, inner, outer):
    """FDSVA-SO (kernels.fdsva_so.fdsva_so_routes' passes) with the routes inner
    (fdsva_so.AUTO, DTM, IDFOZA) and outer (AUTO, DENSE, AZA); its terms by address
    (cpu/pieces.py): on a cold cache they compile in a background child meanwhile. The
    IDFOZA products (long chains only) too, compiled on the first call that takes them."""
    state_ok(mi, q, v, tau, fext)
    nv = mi[0, 2]
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    sc = np.empty(SC_SIZE, q.dtype)
    qdd = np.empty(nv, q.dtype)
    lam = np.empty(nv, np.int64)
    Mt = np.empty((7, nv, nv), q.dtype)
    F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
    T = np.empty((5, nv, nv, nv), q.dtype)
    ahead(fdsva_so_terms_piece, (mi, mf, v, fext, ws, sc, Mt, F, T))
    aba(mi, mf, q, v, tau, fext, ws, qdd)
    twin_later(fdsva_so_terms_piece, (mi, mf, v, fext, ws, sc, Mt, F, T))
    if uses_idfoza(mi, inner):
        twin_later(fdsva_so_products_piece, (mi, mf, ws, lam, Mt, T, dQ, dV, dX, dT, inner,
                                             outer))
    else:
        fdsva_so_products(mi, mf, None, lam, Mt, T, dQ, dV, dX, dT, inner, outer)
    dynamics_finite(qdd)
