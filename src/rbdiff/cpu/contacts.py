"""Entry points of contact and impulse dynamics and their derivatives
(kernels/contact_dynamics.py, kernels/impulse_dynamics.py). No math.

Conventions as cpu/frame_motion.py's: ``*_one(mi, mf, frame_parents, frame_mf, *inputs,
fext, cint, cflt, *float options, ws, *outputs)`` checks one state and runs on the
caller's workspace (its other scratch, sized by the contacts, is allocated here);
``*_batch(..., *outputs, cint, cflt, *float options, check)`` runs the items in order,
checking every item first when ``check``; ``*_parallel(..., nchunks)`` checks, then runs
one unchecked ``*_batch`` per chunk in a prange (bit-equal to the serial one). ``cint``
and ``cflt`` are a contact set's packed tables (contacts/__init__.py), ``nc`` (the
outputs' constraint rows) their row count.

A set of contacts whose rows are dependent (J M^-1 J^T singular, no damping) raises
DEPENDENT; a batch's first such item is reported as cpu.checks.singular_found does."""

import numpy as np
from numba import prange

from ..kernels.contact_dynamics import (CF_WIDTH, CI_DIM, CI_FRAME, CI_JOINT, CI_REF,
                                        CI_ROW, CI_WIDTH, contact_dynamics,
                                        contact_dynamics_derivatives, kept_derivatives,
                                        kept_dynamics, kept_size)
from ..kernels.checks import vector_finite
from ..kernels.impulse_dynamics import impulse_dynamics, impulse_dynamics_derivatives
from ..kernels.fastargs import (gil_release, gil_take, made2, missed, output_arg, release,
                                state_args)
from ..kernels.jit import entry, fast_entry, held_entry, helper, pentry
from ..kernels.kinematics_derivatives import LOCAL, LOCAL_WORLD_ALIGNED
from ..kernels.workspace import W_WIDTH, workspace_rows
from .batch import chunk
from .twin import twin
from .checks import BAD_SHAPE, batch_states_ok, dynamics_finite, state_ok, \
    velocity_state_ok, workspace_ok

BAD_CONTACTS = "contacts: bad packed contact tables"
DEPENDENT = "contacts: J M^-1 J^T is singular (dependent contact rows)"
BAD_DAMPING = "damping: expected a finite number >= 0"
BAD_RESTITUTION = "restitution: expected a finite number in [0, 1]"


@helper
def contacts_ok(fparent, cint, cflt, nc, damping):
    """The packed tables are consistent: frames on moving joints, dimensions 3 or 6,
    LOCAL or LOCAL_WORLD_ALIGNED, rows consecutive and ``nc`` in all; damping >= 0."""
    if cint.shape[1] != CI_WIDTH or cflt.shape[1] != CF_WIDTH \
            or cflt.shape[0] != cint.shape[0]:
        raise ValueError(BAD_CONTACTS)
    row = 0
    for k in range(cint.shape[0]):
        f = cint[k, CI_FRAME]
        if f < 0 or f >= fparent.shape[0] or fparent[f] != cint[k, CI_JOINT] \
                or cint[k, CI_JOINT] < 1:
            raise ValueError(BAD_CONTACTS)
        if cint[k, CI_DIM] != 3 and cint[k, CI_DIM] != 6:
            raise ValueError(BAD_CONTACTS)
        if cint[k, CI_REF] != LOCAL and cint[k, CI_REF] != LOCAL_WORLD_ALIGNED:
            raise ValueError(BAD_CONTACTS)
        if cint[k, CI_ROW] != row:
            raise ValueError(BAD_CONTACTS)
        row += cint[k, CI_DIM]
    if row != nc:
        raise ValueError(BAD_CONTACTS)
    if not (damping >= 0.0 and damping < np.inf):
        raise ValueError(BAD_DAMPING)


@helper
def restitution_ok(r):
    if not (r >= 0.0 and r <= 1.0):
        raise ValueError(BAD_RESTITUTION)


@helper
def dependent_found(bad, check, made=None):
    """singular_found for dependent contact rows. ``made``: the object of an output the
    entry made (kernels.fastargs.output_arg), dropped before the error."""
    if check and bad >= 0:
        release(made)
        raise ValueError(DEPENDENT)
    return bad


@entry
def contact_scratch(mi, nc, dtype):
    """F (njoints, nv, 6), Minv (nv, nv), J (nc, nv), Yt = (M^-1 J^T)^T (nc, nv), W (nc,
    nc), lam (nc,)."""
    nv = mi[0, 2]
    return (np.empty((mi[0, 0] + 1, nv, 6), dtype), np.empty((nv, nv), dtype),
            np.empty((nc, nv), dtype), np.empty((nc, nv), dtype),
            np.empty((nc, nc), dtype), np.empty(nc, dtype))


@entry
def derivative_scratch(mi, nc, dtype):
    """contact_scratch and what the derivatives add: S3 (3, nv, nv), D6 (4, 6, nv),
    G (2, nc, nv), the contact forces on the joints (njoints, 6), qdd (nv,)."""
    nv = mi[0, 2]
    return (np.empty((3, nv, nv), dtype), np.empty((4, 6, nv), dtype),
            np.empty((2, nc, nv), dtype), np.empty((mi[0, 0] + 1, 6), dtype),
            np.empty(nv, dtype))


@helper
def held_size(njoints, nv, nc):
    """float64 entries of the flat scratch a ``*_held`` entry carves (held_scratch and
    held_derivative_scratch): one per thread, model size and nc, kept by the caller."""
    return ((njoints + nv) * W_WIDTH + njoints * nv * 6 + nv * nv + 2 * nc * nv + nc * nc
            + nc + 3 * nv * nv + 24 * nv + 2 * nc * nv + njoints * 6 + 3 * nv + nc)


@helper
def held_scratch(mi, nc, buf):
    """ws and contact_scratch's F, Minv, J, Yt, W, lam as views of the flat ``buf``
    (held_size), and the offset past them: the ``*_held`` entries run without Numba's
    runtime, whose per-array unboxing and allocations cost ~0.6 us a call."""
    nj = mi[0, 0] + 1
    nv = mi[0, 2]
    rows = workspace_rows(mi)
    a = rows * W_WIDTH
    b = a + nj * nv * 6
    c = b + nv * nv
    d = c + nc * nv
    e = d + nc * nv
    f = e + nc * nc
    g = f + nc
    return (buf[:a].reshape((rows, W_WIDTH)), buf[a:b].reshape((nj, nv, 6)),
            buf[b:c].reshape((nv, nv)), buf[c:d].reshape((nc, nv)),
            buf[d:e].reshape((nc, nv)), buf[e:f].reshape((nc, nc)), buf[f:g], g)


@helper
def held_derivative_scratch(mi, nc, buf, o, n6, ng):
    """derivative_scratch (n6 = 4, ng = 2) or impulse_scratch's first five (n6 = 2,
    ng = 1) as views of ``buf`` from offset o, and two more vectors (nv,), (nc,)."""
    nj = mi[0, 0] + 1
    nv = mi[0, 2]
    a = o + 3 * nv * nv
    b = a + n6 * 6 * nv
    c = b + ng * nc * nv
    d = c + nj * 6
    return (buf[o:a].reshape((3, nv, nv)), buf[a:b].reshape((n6, 6, nv)),
            buf[b:c].reshape((ng, nc, nv)), buf[c:d].reshape((nj, 6)), buf[d:d + nv],
            buf[d + nv:d + 2 * nv], buf[d + 2 * nv:d + 2 * nv + nc])


@helper
def held_contacts(mi, fparent, cint, cflt, nc, damping, buf):
    """held_scratch's views after the held entries' common checks (the scratch's size,
    the contact tables)."""
    held_ok(mi, nc, buf)
    contacts_ok(fparent, cint, cflt, nc, damping)
    return held_scratch(mi, nc, buf)


@helper
def held_ok(mi, nc, buf):
    if buf.shape[0] < held_size(mi[0, 0] + 1, mi[0, 2], nc):
        raise ValueError("contacts: held scratch too small")


# ---- contact dynamics ------------------------------------------------------------------


@held_entry
def contact_dynamics_held(mi, mf, fparent, fmf, q, v, tau, cint, cflt, damping, buf, qdd,
                          forces):
    """contact_dynamics_one without fext, on the caller's flat scratch (held_size); q, v,
    tau arrays or, on the fast path, REF objects (kernels.fastargs.state_args: False
    unless float64 1-D ndarrays); True when done."""
    ok, q, v, tau, _ = state_args(q, v, tau, None, qdd)
    if not ok:
        return False
    state_ok(mi, q, v, tau, None)
    nc = forces.shape[0]
    ws, F, Minv, J, Yt, W, lam, _ = held_contacts(mi, fparent, cint, cflt, nc, damping, buf)
    bad = contact_dynamics(mi, mf, fmf, q, v, tau, None, cint, cflt, damping, ws, F, Minv,
                           J, Yt, W, lam, qdd, forces)
    dependent_found(bad, True)
    dynamics_finite(qdd)
    return True


@entry
def contact_dynamics_one(mi, mf, fparent, fmf, q, v, tau, fext, cint, cflt, damping, ws,
                         qdd, forces):
    state_ok(mi, q, v, tau, fext)
    workspace_ok(mi, ws)
    contacts_ok(fparent, cint, cflt, forces.shape[0], damping)
    F, Minv, J, Yt, W, lam = contact_scratch(mi, forces.shape[0], q.dtype)
    bad = contact_dynamics(mi, mf, fmf, q, v, tau, fext, cint, cflt, damping, ws, F, Minv,
                           J, Yt, W, lam, qdd, forces)
    dependent_found(bad, True)
    dynamics_finite(qdd)


@entry
def contact_dynamics_batch(mi, mf, fparent, fmf, q, v, tau, fext, qdd, forces, cint, cflt,
                           damping, check):
    nc = forces.shape[1]
    if check:
        batch_states_ok(mi, q, v, tau, fext)
        contacts_ok(fparent, cint, cflt, nc, damping)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    F, Minv, J, Yt, W, lam = contact_scratch(mi, nc, q.dtype)
    bad = -1
    for b in range(q.shape[0]):
        r = contact_dynamics(mi, mf, fmf, q[b], v[b], tau[b], fext[b], cint, cflt, damping,
                             ws, F, Minv, J, Yt, W, lam, qdd[b], forces[b])
        if bad < 0 and r >= 0:
            bad = b
    return dependent_found(bad, check)


@pentry
def contact_dynamics_parallel(mi, mf, fparent, fmf, q, v, tau, fext, qdd, forces, cint,
                              cflt, damping, nchunks):
    batch_states_ok(mi, q, v, tau, fext)
    contacts_ok(fparent, cint, cflt, forces.shape[1], damping)
    bad = np.full(nchunks, -1, np.int64)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        bad[c] = twin(contact_dynamics_batch, (mi, mf, fparent, fmf, q[lo:hi], v[lo:hi],
                                               tau[lo:hi], fext[lo:hi], qdd[lo:hi],
                                               forces[lo:hi], cint, cflt, damping, False))
    dependent_found(bad.max(), True)


# ---- contact dynamics derivatives ------------------------------------------------------


@held_entry
def contact_dynamics_derivatives_held(mi, mf, fparent, fmf, q, v, tau, cint, cflt, damping,
                                      buf, dqdd_dq, dqdd_dv, dqdd_dtau, df_dq, df_dv,
                                      df_dtau):
    """contact_dynamics_derivatives_one without fext, on the caller's flat scratch."""
    ok, q, v, tau, _ = state_args(q, v, tau, None, dqdd_dq)
    if not ok:
        return False
    state_ok(mi, q, v, tau, None)
    nc = df_dq.shape[0]
    ws, F, Minv, J, Yt, W, lam, o = held_contacts(mi, fparent, cint, cflt, nc, damping, buf)
    S3, D6, G, fc, qdd2, qdd, forces = held_derivative_scratch(mi, nc, buf, o, 4, 2)
    bad = contact_dynamics_derivatives(mi, mf, fparent, fmf, q, v, tau, None, cint, cflt,
                                       damping, False, ws, F, Minv, J, Yt, W, lam, S3, D6, G,
                                       fc, qdd2, qdd, forces, dqdd_dq, dqdd_dv, dqdd_dtau,
                                       df_dq, df_dv, df_dtau)
    dependent_found(bad, True)
    dynamics_finite(qdd)
    return True


@entry
def contact_dynamics_derivatives_one(mi, mf, fparent, fmf, q, v, tau, fext, cint, cflt,
                                     damping, ws, dqdd_dq, dqdd_dv, dqdd_dtau, df_dq, df_dv,
                                     df_dtau):
    state_ok(mi, q, v, tau, fext)
    workspace_ok(mi, ws)
    nc = df_dq.shape[0]
    qdd = np.empty(mi[0, 2], q.dtype)
    forces = np.empty(nc, q.dtype)
    contacts_ok(fparent, cint, cflt, nc, damping)
    F, Minv, J, Yt, W, lam = contact_scratch(mi, nc, q.dtype)
    S3, D6, G, fc, qdd2 = derivative_scratch(mi, nc, q.dtype)
    bad = contact_dynamics_derivatives(mi, mf, fparent, fmf, q, v, tau, fext, cint, cflt,
                                       damping, False, ws, F, Minv, J, Yt, W, lam, S3, D6, G,
                                       fc, qdd2, qdd, forces, dqdd_dq, dqdd_dv, dqdd_dtau,
                                       df_dq, df_dv, df_dtau)
    dependent_found(bad, True)
    dynamics_finite(qdd)


@entry
def contact_dynamics_derivatives_batch(mi, mf, fparent, fmf, q, v, tau, fext, dqdd_dq,
                                       dqdd_dv, dqdd_dtau, df_dq, df_dv, df_dtau, cint, cflt,
                                       damping, check):
    nc = df_dq.shape[1]
    qdd = np.empty(mi[0, 2], q.dtype)
    forces = np.empty(nc, q.dtype)
    if check:
        batch_states_ok(mi, q, v, tau, fext)
        contacts_ok(fparent, cint, cflt, nc, damping)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    F, Minv, J, Yt, W, lam = contact_scratch(mi, nc, q.dtype)
    S3, D6, G, fc, qdd2 = derivative_scratch(mi, nc, q.dtype)
    bad = -1
    for b in range(q.shape[0]):
        r = contact_dynamics_derivatives(mi, mf, fparent, fmf, q[b], v[b], tau[b], fext[b],
                                         cint, cflt, damping, False, ws, F, Minv, J, Yt, W,
                                         lam, S3, D6, G, fc, qdd2, qdd, forces, dqdd_dq[b],
                                         dqdd_dv[b], dqdd_dtau[b], df_dq[b], df_dv[b],
                                         df_dtau[b])
        if bad < 0 and r >= 0:
            bad = b
    return dependent_found(bad, check)


# ---- a solve kept for its derivatives (trajopt: the rollout's, Crocoddyl's calc data) --


@helper
def kept_ok(mi, nc, kept):
    if kept.shape[-1] < kept_size(mi[0, 2], nc):
        raise ValueError("contacts: kept solve too small")


@entry
def contact_dynamics_kept(mi, mf, fparent, fmf, q, v, tau, cint, cflt, ws, F, rec, qdd,
                          forces):
    """contact_dynamics_one without fext or damping, its solve kept in ``rec``
    (kept_size) for contact_dynamics_derivatives_kept_batch at the same (q, v, tau); F
    (njoints, nv, 6) the caller's scratch (a rollout's, one for all its knots)."""
    state_ok(mi, q, v, tau, None)
    workspace_ok(mi, ws)
    nc = forces.shape[0]
    contacts_ok(fparent, cint, cflt, nc, 0.0)
    kept_ok(mi, nc, rec)
    if F.shape[0] != mi[0, 0] + 1 or F.shape[1] != mi[0, 2]:
        raise ValueError("contacts: scratch F of another shape")
    bad = kept_dynamics(mi, mf, fmf, q, v, tau, cint, cflt, ws, F, rec, qdd, forces)
    dependent_found(bad, True)
    dynamics_finite(qdd)


@entry
def contact_dynamics_derivatives_kept_batch(mi, mf, fparent, fmf, q, v, tau, kept, dqdd_dq,
                                            dqdd_dv, dqdd_dtau, df_dq, df_dv, df_dtau, cint,
                                            cflt):
    """contact_dynamics_derivatives_batch (no fext, no damping) at the solves kept (B,
    kept_size) by contact_dynamics_kept at the same (q, v, tau): not solved again, the
    same numbers."""
    nc = df_dq.shape[1]
    batch_states_ok(mi, q, v, tau, None)
    contacts_ok(fparent, cint, cflt, nc, 0.0)
    kept_ok(mi, nc, kept)
    if kept.shape[0] != q.shape[0]:
        raise ValueError("contacts: one kept solve an item")
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    F = np.empty((0, mi[0, 2], 6), q.dtype)       # the solve's scratch: not solved again
    S3, D6, G, fc, qdd2 = derivative_scratch(mi, nc, q.dtype)
    for b in range(q.shape[0]):
        kept_derivatives(mi, mf, fparent, fmf, q[b], v[b], tau[b], cint, cflt, ws, F,
                         kept[b], S3, D6, G, fc, qdd2, dqdd_dq[b], dqdd_dv[b], dqdd_dtau[b],
                         df_dq[b], df_dv[b], df_dtau[b])


@pentry
def contact_dynamics_derivatives_parallel(mi, mf, fparent, fmf, q, v, tau, fext, dqdd_dq,
                                          dqdd_dv, dqdd_dtau, df_dq, df_dv, df_dtau, cint,
                                          cflt, damping, nchunks):
    batch_states_ok(mi, q, v, tau, fext)
    contacts_ok(fparent, cint, cflt, df_dq.shape[1], damping)
    bad = np.full(nchunks, -1, np.int64)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        bad[c] = twin(contact_dynamics_derivatives_batch, (mi, mf, fparent, fmf, q[lo:hi],
                                                           v[lo:hi], tau[lo:hi], fext[lo:hi],
                                                           dqdd_dq[lo:hi], dqdd_dv[lo:hi],
                                                           dqdd_dtau[lo:hi], df_dq[lo:hi],
                                                           df_dv[lo:hi], df_dtau[lo:hi], cint,
                                                           cflt, damping, False))
    dependent_found(bad.max(), True)


# ---- impulse dynamics ------------------------------------------------------------------


@fast_entry
def impulse_dynamics_held(mi, mf, fparent, fmf, q, v, cint, cflt, r, damping, buf, nc, vout,
                          impulses, result):
    """impulse_dynamics_one on the caller's flat scratch (held_size), nc contact rows; vout
    and impulses arrays, or their shapes (made here: kernels.fastargs.output_arg, the
    result then the pair of the named tuple class ``result``). Holds the GIL to make
    them, and lets it go around the kernel (which cannot raise: the checks come before
    and after), so threads, each on its own scratch, run in parallel."""
    ok, q, v, _, _ = state_args(q, v, None, None, None)
    if not ok:
        return missed(vout)
    velocity_state_ok(mi, q, v)
    restitution_ok(r)
    ws, F, Minv, J, Yt, W, lam, _ = held_contacts(mi, fparent, cint, cflt, nc, damping, buf)
    o_v, vv = output_arg(vout)
    o_i, imp = output_arg(impulses)
    if vv.shape[0] != mi[0, 2] or imp.shape[0] != nc:
        release(o_v)
        release(o_i)
        raise ValueError(BAD_SHAPE)
    state = gil_release()
    bad = impulse_dynamics(mi, mf, fmf, q, v, cint, r, damping, ws, F, Minv, J, Yt, W, lam,
                           vv, imp)
    gil_take(state)
    if bad >= 0 or not vector_finite(vv):     # refused: drop what was made, say why
        release(o_i)
        dependent_found(bad, True, o_v)
        dynamics_finite(vv, o_v)
    return made2(o_v, o_i, result)


@held_entry
def impulse_dynamics_derivatives_held(mi, mf, fparent, fmf, q, v, cint, cflt, r, damping,
                                      buf, dv_dq, dv_dv, di_dq, di_dv):
    """impulse_dynamics_derivatives_one on the caller's flat scratch (held_size)."""
    ok, q, v, _, _ = state_args(q, v, None, None, dv_dq)
    if not ok:
        return False
    velocity_state_ok(mi, q, v)
    nc = di_dq.shape[0]
    restitution_ok(r)
    ws, F, Minv, J, Yt, W, lam, o = held_contacts(mi, fparent, cint, cflt, nc, damping, buf)
    S3, D6, G, fc, dv, vout, imp = held_derivative_scratch(mi, nc, buf, o, 2, 1)
    bad = impulse_dynamics_derivatives(mi, mf, fparent, fmf, q, v, cint, r, damping, ws, F,
                                       Minv, J, Yt, W, lam, S3, D6, G, fc, dv, vout, imp,
                                       dv_dq, dv_dv, di_dq, di_dv)
    dependent_found(bad, True)
    dynamics_finite(vout)
    return True


@entry
def impulse_dynamics_one(mi, mf, fparent, fmf, q, v, cint, cflt, r, damping, ws, vout,
                         impulses):
    velocity_state_ok(mi, q, v)
    workspace_ok(mi, ws)
    contacts_ok(fparent, cint, cflt, impulses.shape[0], damping)
    restitution_ok(r)
    F, Minv, J, Yt, W, lam = contact_scratch(mi, impulses.shape[0], q.dtype)
    bad = impulse_dynamics(mi, mf, fmf, q, v, cint, r, damping, ws, F, Minv, J, Yt, W, lam,
                           vout, impulses)
    dependent_found(bad, True)
    dynamics_finite(vout)


@entry
def impulse_dynamics_batch(mi, mf, fparent, fmf, q, v, vout, impulses, cint, cflt, r,
                           damping, check):
    nc = impulses.shape[1]
    if check:
        batch_states_ok(mi, q, v, v, None)
        contacts_ok(fparent, cint, cflt, nc, damping)
        restitution_ok(r)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    F, Minv, J, Yt, W, lam = contact_scratch(mi, nc, q.dtype)
    bad = -1
    for b in range(q.shape[0]):
        x = impulse_dynamics(mi, mf, fmf, q[b], v[b], cint, r, damping, ws, F, Minv, J, Yt, W,
                             lam, vout[b], impulses[b])
        if bad < 0 and x >= 0:
            bad = b
    return dependent_found(bad, check)


@pentry
def impulse_dynamics_parallel(mi, mf, fparent, fmf, q, v, vout, impulses, cint, cflt, r,
                              damping, nchunks):
    batch_states_ok(mi, q, v, v, None)
    contacts_ok(fparent, cint, cflt, impulses.shape[1], damping)
    restitution_ok(r)
    bad = np.full(nchunks, -1, np.int64)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        bad[c] = twin(impulse_dynamics_batch, (mi, mf, fparent, fmf, q[lo:hi], v[lo:hi],
                                               vout[lo:hi], impulses[lo:hi], cint, cflt, r,
                                               damping, False))
    dependent_found(bad.max(), True)


@entry
def impulse_scratch(mi, nc, dtype):
    """What the impulse derivatives add to contact_scratch: S3 (3, nv, nv), D6 (2, 6,
    nv), G (1, nc, nv), fc (njoints, 6), dv, vout (nv,), impulses (nc,)."""
    nv = mi[0, 2]
    return (np.empty((3, nv, nv), dtype), np.empty((2, 6, nv), dtype),
            np.empty((1, nc, nv), dtype), np.empty((mi[0, 0] + 1, 6), dtype),
            np.empty(nv, dtype), np.empty(nv, dtype), np.empty(nc, dtype))


@entry
def impulse_dynamics_derivatives_one(mi, mf, fparent, fmf, q, v, cint, cflt, r, damping, ws,
                                     dv_dq, dv_dv, di_dq, di_dv):
    velocity_state_ok(mi, q, v)
    workspace_ok(mi, ws)
    nc = di_dq.shape[0]
    contacts_ok(fparent, cint, cflt, nc, damping)
    restitution_ok(r)
    F, Minv, J, Yt, W, lam = contact_scratch(mi, nc, q.dtype)
    S3, D6, G, fc, dv, vout, imp = impulse_scratch(mi, nc, q.dtype)
    bad = impulse_dynamics_derivatives(mi, mf, fparent, fmf, q, v, cint, r, damping, ws, F,
                                       Minv, J, Yt, W, lam, S3, D6, G, fc, dv, vout, imp,
                                       dv_dq, dv_dv, di_dq, di_dv)
    dependent_found(bad, True)
    dynamics_finite(vout)


@entry
def impulse_dynamics_derivatives_batch(mi, mf, fparent, fmf, q, v, dv_dq, dv_dv, di_dq,
                                       di_dv, cint, cflt, r, damping, check):
    nc = di_dq.shape[1]
    if check:
        batch_states_ok(mi, q, v, v, None)
        contacts_ok(fparent, cint, cflt, nc, damping)
        restitution_ok(r)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    F, Minv, J, Yt, W, lam = contact_scratch(mi, nc, q.dtype)
    S3, D6, G, fc, dv, vout, imp = impulse_scratch(mi, nc, q.dtype)
    bad = -1
    for b in range(q.shape[0]):
        x = impulse_dynamics_derivatives(mi, mf, fparent, fmf, q[b], v[b], cint, r, damping,
                                         ws, F, Minv, J, Yt, W, lam, S3, D6, G, fc, dv, vout,
                                         imp, dv_dq[b], dv_dv[b], di_dq[b], di_dv[b])
        if bad < 0 and x >= 0:
            bad = b
    return dependent_found(bad, check)


@pentry
def impulse_dynamics_derivatives_parallel(mi, mf, fparent, fmf, q, v, dv_dq, dv_dv, di_dq,
                                          di_dv, cint, cflt, r, damping, nchunks):
    batch_states_ok(mi, q, v, v, None)
    contacts_ok(fparent, cint, cflt, di_dq.shape[1], damping)
    restitution_ok(r)
    bad = np.full(nchunks, -1, np.int64)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        bad[c] = twin(impulse_dynamics_derivatives_batch, (mi, mf, fparent, fmf, q[lo:hi],
                                                           v[lo:hi], dv_dq[lo:hi],
                                                           dv_dv[lo:hi], di_dq[lo:hi],
                                                           di_dv[lo:hi], cint, cflt, r,
                                                           damping, False))
    dependent_found(bad.max(), True)
