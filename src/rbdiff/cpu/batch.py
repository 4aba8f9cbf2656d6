"""Batch entry points, two per function; no math (rbdiff.cpu.policy picks one per call):

``*_batch``     the items in order on this thread, on one set of scratch arrays for the
                whole call (no allocation per item); ``check``: check every item first
                (rbdiff.cpu.checks), so a refused batch writes nothing;
``*_parallel``  checks every item, then cuts the batch into ``nchunks`` contiguous
                chunks, one unchecked ``*_batch`` call per chunk in a ``prange``: scratch
                once per chunk, every item computed by the same compiled code as in
                ``*_batch``, so results are bit-equal.

Arguments: the model's (mi, mf) (mi alone for integrate and difference; with the frame
table (frame_parents, frame_mf) for the frame functions), the batched inputs (leading
axis B) and fext (B, njoints or 0, 6), then the batched outputs, then the function's
options."""

import numpy as np
from numba import prange

from ..kernels.aba import aba
from ..kernels.aba_derivatives import aba_derivatives
from ..kernels.aza import AZA_WIDTH, aba_derivatives_aza, use_aza
from ..kernels.checks import vector_finite
from ..kernels.configuration import difference, integrate
from ..kernels.crba import crba
from ..kernels.fdsva_so import fdsva_so_routes
from ..kernels.frames import (forward_kinematics, frame_jacobian, frame_placement,
                              frame_placements)
from ..kernels.idsva import IDSVA_WIDTH, idsva
from ..kernels.idsva_so import SC_SIZE, idsva_so
from ..kernels.jit import entry, fast_entry, helper, pentry
from ..kernels.kinematics_derivatives import (STATE_WIDTH, kinematics_derivatives,
                                              kinematics_derivatives_of_joint)
from ..kernels.minverse import minverse
from ..kernels.rnea import gravity, nonlinear_effects, rnea
from ..kernels.rnea_chain_rule import (REC_WIDTH, aba_derivatives_chain_rule,
                                       record_offsets, rnea_chain_rule)
from ..kernels.workspace import W_WIDTH, workspace_rows
from .twin import twin
from .checks import (batch_configurations_ok, batch_states_ok, batch_tangent_ok, workspace_ok,
                     diagonal_finite, fk_batch_ok, frame_ok, joint_ok, reference_ok,
                     singular_found)


@helper
def chunk(B, nchunks, c):
    """Items [lo, hi) of chunk c when B items are cut into nchunks near-equal chunks."""
    return B * c // nchunks, B * (c + 1) // nchunks


# ---- configuration space (no scratch) --------------------------------------------------


@entry
def integrate_batch(mi, q, v, qout, check):
    if check:
        batch_tangent_ok(mi, q, v)
    for b in range(q.shape[0]):
        integrate(mi, q[b], v[b], qout[b])


@pentry
def integrate_parallel(mi, q, v, qout, nchunks):
    batch_tangent_ok(mi, q, v)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(integrate_batch, (mi, q[lo:hi], v[lo:hi], qout[lo:hi], False))


@entry
def difference_batch(mi, q0, q1, v, check):
    if check:
        batch_configurations_ok(mi, q0)
        batch_configurations_ok(mi, q1)
    for b in range(q0.shape[0]):
        difference(mi, q0[b], q1[b], v[b])


@pentry
def difference_parallel(mi, q0, q1, v, nchunks):
    batch_configurations_ok(mi, q0)
    batch_configurations_ok(mi, q1)
    for c in prange(nchunks):
        lo, hi = chunk(q0.shape[0], nchunks, c)
        twin(difference_batch, (mi, q0[lo:hi], q1[lo:hi], v[lo:hi], False))


# ---- dynamics --------------------------------------------------------------------------


@entry
def rnea_batch(mi, mf, q, v, a, fext, tau, check):
    if check:
        batch_states_ok(mi, q, v, a, fext)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        rnea(mi, mf, q[b], v[b], a[b], fext[b], ws, tau[b])


@pentry
def rnea_parallel(mi, mf, q, v, a, fext, tau, nchunks):
    batch_states_ok(mi, q, v, a, fext)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(rnea_batch, (mi, mf, q[lo:hi], v[lo:hi], a[lo:hi], fext[lo:hi], tau[lo:hi],
                          False))


@fast_entry
def rnea_few(mi, mf, q, v, a, fext, tau, ws):
    """rnea_batch for a batch of a few microseconds (cpu.policy's untimed ones) on the
    model's single-call workspace ``ws``: no allocation and no reference counting of the
    arguments (~0.2 us of a 4-item batch); holds the GIL, as the single entries do, since
    ``ws`` is shared. Only for batches without external forces (fext (B, 0, 6)): the
    kernels get None, the specialisation the single calls compiled."""
    batch_states_ok(mi, q, v, a, fext)
    workspace_ok(mi, ws)
    if fext.shape[1] != 0:
        raise ValueError("fext: the few-item entries take no external forces")
    for b in range(q.shape[0]):
        rnea(mi, mf, q[b], v[b], a[b], None, ws, tau[b])


@entry
def crba_batch(mi, mf, q, M, check):
    if check:
        batch_configurations_ok(mi, q)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        crba(mi, mf, q[b], ws, M[b])


@pentry
def crba_parallel(mi, mf, q, M, nchunks):
    batch_configurations_ok(mi, q)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(crba_batch, (mi, mf, q[lo:hi], M[lo:hi], False))


@entry
def aba_batch(mi, mf, q, v, tau, fext, qdd, check):
    if check:
        batch_states_ok(mi, q, v, tau, fext)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    bad = -1
    for b in range(q.shape[0]):
        aba(mi, mf, q[b], v[b], tau[b], fext[b], ws, qdd[b])
        if bad < 0 and not vector_finite(qdd[b]):
            bad = b
    return singular_found(bad, check)


@pentry
def aba_parallel(mi, mf, q, v, tau, fext, qdd, nchunks):
    batch_states_ok(mi, q, v, tau, fext)
    bad = np.full(nchunks, -1, np.int64)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        bad[c] = twin(aba_batch, (mi, mf, q[lo:hi], v[lo:hi], tau[lo:hi], fext[lo:hi],
                                  qdd[lo:hi], False))
    singular_found(bad.max(), True)


@fast_entry
def aba_few(mi, mf, q, v, tau, fext, qdd, ws):
    """aba_batch on the model's single-call workspace (as rnea_few)."""
    batch_states_ok(mi, q, v, tau, fext)
    workspace_ok(mi, ws)
    if fext.shape[1] != 0:
        raise ValueError("fext: the few-item entries take no external forces")
    bad = -1
    for b in range(q.shape[0]):
        aba(mi, mf, q[b], v[b], tau[b], None, ws, qdd[b])
        if bad < 0 and not vector_finite(qdd[b]):
            bad = b
    singular_found(bad, True)


@entry
def minverse_batch(mi, mf, q, Minv, check):
    if check:
        batch_configurations_ok(mi, q)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    F = np.empty((mi[0, 0] + 1, mi[0, 2], 6), q.dtype)
    bad = -1
    for b in range(q.shape[0]):
        minverse(mi, mf, q[b], ws, F, Minv[b])
        if bad < 0 and not diagonal_finite(Minv[b]):
            bad = b
    return singular_found(bad, check)


@pentry
def minverse_parallel(mi, mf, q, Minv, nchunks):
    batch_configurations_ok(mi, q)
    bad = np.full(nchunks, -1, np.int64)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        bad[c] = twin(minverse_batch, (mi, mf, q[lo:hi], Minv[lo:hi], False))
    singular_found(bad.max(), True)


@entry
def gravity_batch(mi, mf, q, tau, check):
    if check:
        batch_configurations_ok(mi, q)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        gravity(mi, mf, q[b], ws, tau[b])


@pentry
def gravity_parallel(mi, mf, q, tau, nchunks):
    batch_configurations_ok(mi, q)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(gravity_batch, (mi, mf, q[lo:hi], tau[lo:hi], False))


@entry
def nonlinear_effects_batch(mi, mf, q, v, tau, check):
    if check:
        batch_states_ok(mi, q, v, v, None)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        nonlinear_effects(mi, mf, q[b], v[b], ws, tau[b])


@pentry
def nonlinear_effects_parallel(mi, mf, q, v, tau, nchunks):
    batch_states_ok(mi, q, v, v, None)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(nonlinear_effects_batch, (mi, mf, q[lo:hi], v[lo:hi], tau[lo:hi], False))


# ---- kinematics and frames -------------------------------------------------------------


@entry
def forward_kinematics_batch(mi, mf, q, v, a, oMi, vel, acc, check):
    """oMi and, unless None (then v, resp. a, is None too), vel and acc."""
    if check:
        fk_batch_ok(mi, q, v, a)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        if vel is None:
            forward_kinematics(mi, mf, q[b], None, None, ws, oMi[b], None, None)
        elif acc is None:
            forward_kinematics(mi, mf, q[b], v[b], None, ws, oMi[b], vel[b], None)
        else:
            forward_kinematics(mi, mf, q[b], v[b], a[b], ws, oMi[b], vel[b], acc[b])


@pentry
def forward_kinematics_parallel(mi, mf, q, v, a, oMi, vel, acc, nchunks):
    fk_batch_ok(mi, q, v, a)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        if vel is None:     # None cannot be sliced: the branches are pruned by type
            twin(forward_kinematics_batch, (mi, mf, q[lo:hi], None, None, oMi[lo:hi], None,
                                            None, False))
        elif acc is None:
            twin(forward_kinematics_batch, (mi, mf, q[lo:hi], v[lo:hi], None, oMi[lo:hi],
                                            vel[lo:hi], None, False))
        else:
            twin(forward_kinematics_batch, (mi, mf, q[lo:hi], v[lo:hi], a[lo:hi], oMi[lo:hi],
                                            vel[lo:hi], acc[lo:hi], False))


@entry
def frame_placement_batch(mi, mf, fparent, fmf, q, T, frame, check):
    if check:
        batch_configurations_ok(mi, q)
        frame_ok(fparent, frame)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        frame_placement(mi, mf, fparent, fmf, q[b], frame, ws, T[b])


@pentry
def frame_placement_parallel(mi, mf, fparent, fmf, q, T, frame, nchunks):
    batch_configurations_ok(mi, q)
    frame_ok(fparent, frame)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(frame_placement_batch, (mi, mf, fparent, fmf, q[lo:hi], T[lo:hi], frame, False))


@entry
def frame_placements_batch(mi, mf, fparent, fmf, q, T, check):
    if check:
        batch_configurations_ok(mi, q)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        frame_placements(mi, mf, fparent, fmf, q[b], ws, T[b])


@pentry
def frame_placements_parallel(mi, mf, fparent, fmf, q, T, nchunks):
    batch_configurations_ok(mi, q)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(frame_placements_batch, (mi, mf, fparent, fmf, q[lo:hi], T[lo:hi], False))


@entry
def frame_jacobian_batch(mi, mf, fparent, fmf, q, J, frame, reference, check):
    if check:
        batch_configurations_ok(mi, q)
        frame_ok(fparent, frame)
        reference_ok(reference)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        frame_jacobian(mi, mf, fparent, fmf, q[b], frame, reference, ws, J[b])


@pentry
def frame_jacobian_parallel(mi, mf, fparent, fmf, q, J, frame, reference, nchunks):
    batch_configurations_ok(mi, q)
    frame_ok(fparent, frame)
    reference_ok(reference)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(frame_jacobian_batch, (mi, mf, fparent, fmf, q[lo:hi], J[lo:hi], frame, reference,
                                    False))


# ---- first-order derivatives -----------------------------------------------------------


@entry
def rnea_derivatives_batch(mi, mf, q, v, a, fext, dq, dv, da, check):
    if check:
        batch_states_ok(mi, q, v, a, fext)
    ws = np.empty((workspace_rows(mi), IDSVA_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        idsva(mi, mf, q[b], v[b], a[b], fext[b], ws, dq[b], dv[b], da[b])


@pentry
def rnea_derivatives_parallel(mi, mf, q, v, a, fext, dq, dv, da, nchunks):
    batch_states_ok(mi, q, v, a, fext)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(rnea_derivatives_batch, (mi, mf, q[lo:hi], v[lo:hi], a[lo:hi], fext[lo:hi],
                                      dq[lo:hi], dv[lo:hi], da[lo:hi], False))


@entry
def rnea_chain_rule_batch(mi, mf, q, v, a, fext, dq, dv, da, check):
    if check:
        batch_states_ok(mi, q, v, a, fext)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    off = np.empty(mi[0, 0] + 2, np.int64)
    G = np.empty((record_offsets(mi, off), REC_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        rnea_chain_rule(mi, mf, q[b], v[b], a[b], fext[b], ws, G, off, dq[b], dv[b], da[b])


@pentry
def rnea_chain_rule_parallel(mi, mf, q, v, a, fext, dq, dv, da, nchunks):
    batch_states_ok(mi, q, v, a, fext)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(rnea_chain_rule_batch, (mi, mf, q[lo:hi], v[lo:hi], a[lo:hi], fext[lo:hi],
                                     dq[lo:hi], dv[lo:hi], da[lo:hi], False))


@entry
def aba_derivatives_batch(mi, mf, q, v, tau, fext, dq, dv, dtau, check):
    """IDSVA FD derivatives with the dense product of eq. 24 (DMM). The AZA product has
    entries of its own (aba_derivatives_aza_batch): a first batched call compiles one
    kernel, not both."""
    if check:
        batch_states_ok(mi, q, v, tau, fext)
    nv = mi[0, 2]
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    qdd = np.empty(nv, q.dtype)
    S3 = np.empty((3, nv, nv), q.dtype)
    F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
    bad = -1
    for b in range(q.shape[0]):
        aba_derivatives(mi, mf, q[b], v[b], tau[b], fext[b], ws, qdd, S3, F,
                        dq[b], dv[b], dtau[b])
        if bad < 0 and not vector_finite(qdd):
            bad = b
    return singular_found(bad, check)


@pentry
def aba_derivatives_parallel(mi, mf, q, v, tau, fext, dq, dv, dtau, nchunks):
    batch_states_ok(mi, q, v, tau, fext)
    bad = np.full(nchunks, -1, np.int64)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        bad[c] = twin(aba_derivatives_batch, (mi, mf, q[lo:hi], v[lo:hi], tau[lo:hi],
                                              fext[lo:hi], dq[lo:hi], dv[lo:hi], dtau[lo:hi],
                                              False))
    singular_found(bad.max(), True)


@entry
def aba_derivatives_aza_batch(mi, mf, q, v, tau, fext, dq, dv, dtau, check):
    """aba_derivatives_batch with the AZA product of eq. 24."""
    if check:
        batch_states_ok(mi, q, v, tau, fext)
    nv = mi[0, 2]
    ws = np.empty((workspace_rows(mi), AZA_WIDTH), q.dtype)
    qdd = np.empty(nv, q.dtype)
    S3 = np.empty((3, nv, nv), q.dtype)
    F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
    bad = -1
    for b in range(q.shape[0]):
        aba_derivatives_aza(mi, mf, q[b], v[b], tau[b], fext[b], ws, qdd, S3, F,
                            dq[b], dv[b], dtau[b])
        if bad < 0 and not vector_finite(qdd):
            bad = b
    return singular_found(bad, check)


@pentry
def aba_derivatives_aza_parallel(mi, mf, q, v, tau, fext, dq, dv, dtau, nchunks):
    batch_states_ok(mi, q, v, tau, fext)
    bad = np.full(nchunks, -1, np.int64)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        bad[c] = twin(aba_derivatives_aza_batch, (mi, mf, q[lo:hi], v[lo:hi], tau[lo:hi],
                                                  fext[lo:hi], dq[lo:hi], dv[lo:hi],
                                                  dtau[lo:hi], False))
    singular_found(bad.max(), True)


@entry
def aba_chain_rule_batch(mi, mf, q, v, tau, fext, dq, dv, dtau, product, check):
    if check:
        batch_states_ok(mi, q, v, tau, fext)
    nv = mi[0, 2]
    aza = use_aza(mi, product)
    ws = np.empty((workspace_rows(mi), AZA_WIDTH if aza else W_WIDTH), q.dtype)
    off = np.empty(mi[0, 0] + 2, np.int64)
    G = np.empty((record_offsets(mi, off), REC_WIDTH), q.dtype)
    qdd = np.empty(nv, q.dtype)
    S3 = np.empty((3, nv, nv), q.dtype)
    F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
    bad = -1
    for b in range(q.shape[0]):
        aba_derivatives_chain_rule(mi, mf, q[b], v[b], tau[b], fext[b], ws, G, off, qdd, S3,
                                   F, dq[b], dv[b], dtau[b], aza)
        if bad < 0 and not vector_finite(qdd):
            bad = b
    return singular_found(bad, check)


@pentry
def aba_chain_rule_parallel(mi, mf, q, v, tau, fext, dq, dv, dtau, product, nchunks):
    batch_states_ok(mi, q, v, tau, fext)
    bad = np.full(nchunks, -1, np.int64)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        bad[c] = twin(aba_chain_rule_batch, (mi, mf, q[lo:hi], v[lo:hi], tau[lo:hi],
                                             fext[lo:hi], dq[lo:hi], dv[lo:hi], dtau[lo:hi],
                                             product, False))
    singular_found(bad.max(), True)


@entry
def kinematics_derivatives_batch(mi, mf, q, v, a, dvq, dvv, daq, dav, daa, reference, check):
    if check:
        batch_states_ok(mi, q, v, a, None)
    ws = np.empty((workspace_rows(mi), STATE_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        kinematics_derivatives(mi, mf, q[b], v[b], a[b], reference, ws,
                               dvq[b], dvv[b], daq[b], dav[b], daa[b])


@pentry
def kinematics_derivatives_parallel(mi, mf, q, v, a, dvq, dvv, daq, dav, daa, reference,
                                    nchunks):
    batch_states_ok(mi, q, v, a, None)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(kinematics_derivatives_batch, (mi, mf, q[lo:hi], v[lo:hi], a[lo:hi], dvq[lo:hi],
                                            dvv[lo:hi], daq[lo:hi], dav[lo:hi], daa[lo:hi],
                                            reference, False))


@entry
def joint_kinematics_derivatives_batch(mi, mf, q, v, a, dvq, dvv, daq, dav, daa, joint,
                                       reference, check):
    if check:
        batch_states_ok(mi, q, v, a, None)
        joint_ok(mi, joint)
        reference_ok(reference)
    ws = np.empty((workspace_rows(mi), STATE_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        kinematics_derivatives_of_joint(mi, mf, q[b], v[b], a[b], joint, reference, ws,
                                        dvq[b], dvv[b], daq[b], dav[b], daa[b])


@pentry
def joint_kinematics_derivatives_parallel(mi, mf, q, v, a, dvq, dvv, daq, dav, daa, joint,
                                          reference, nchunks):
    batch_states_ok(mi, q, v, a, None)
    joint_ok(mi, joint)
    reference_ok(reference)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(joint_kinematics_derivatives_batch, (mi, mf, q[lo:hi], v[lo:hi], a[lo:hi],
                                                  dvq[lo:hi], dvv[lo:hi], daq[lo:hi],
                                                  dav[lo:hi], daa[lo:hi], joint, reference,
                                                  False))


# ---- second-order derivatives ----------------------------------------------------------


@entry
def rnea_second_order_batch(mi, mf, q, v, a, fext, Q, V, X, D, check):
    if check:
        batch_states_ok(mi, q, v, a, fext)
    ws = np.empty((workspace_rows(mi), IDSVA_WIDTH), q.dtype)
    sc = np.empty(SC_SIZE, q.dtype)
    for b in range(q.shape[0]):
        idsva_so(mi, mf, q[b], v[b], a[b], fext[b], ws, sc, Q[b], V[b], X[b], D[b])


@pentry
def rnea_second_order_parallel(mi, mf, q, v, a, fext, Q, V, X, D, nchunks):
    batch_states_ok(mi, q, v, a, fext)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(rnea_second_order_batch, (mi, mf, q[lo:hi], v[lo:hi], a[lo:hi], fext[lo:hi],
                                       Q[lo:hi], V[lo:hi], X[lo:hi], D[lo:hi], False))


@entry
def aba_second_order_batch(mi, mf, q, v, tau, fext, dQ, dV, dX, dT, inner, outer, check):
    """FDSVA-SO with the routes inner (fdsva_so.AUTO, DTM, IDFOZA) and outer (AUTO,
    DENSE, AZA)."""
    if check:
        batch_states_ok(mi, q, v, tau, fext)
    nv = mi[0, 2]
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    sc = np.empty(SC_SIZE, q.dtype)
    qdd = np.empty(nv, q.dtype)
    lam = np.empty(nv, np.int64)
    Mt = np.empty((7, nv, nv), q.dtype)
    F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
    T = np.empty((5, nv, nv, nv), q.dtype)
    bad = -1
    for b in range(q.shape[0]):
        fdsva_so_routes(mi, mf, q[b], v[b], tau[b], fext[b], ws, sc, qdd, lam, Mt, F, T,
                        dQ[b], dV[b], dX[b], dT[b], inner, outer)
        if bad < 0 and not vector_finite(qdd):
            bad = b
    return singular_found(bad, check)


@pentry
def aba_second_order_parallel(mi, mf, q, v, tau, fext, dQ, dV, dX, dT, inner, outer,
                              nchunks):
    batch_states_ok(mi, q, v, tau, fext)
    bad = np.full(nchunks, -1, np.int64)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        bad[c] = twin(aba_second_order_batch, (mi, mf, q[lo:hi], v[lo:hi], tau[lo:hi],
                                               fext[lo:hi], dQ[lo:hi], dV[lo:hi], dX[lo:hi],
                                               dT[lo:hi], inner, outer, False))
    singular_found(bad.max(), True)
