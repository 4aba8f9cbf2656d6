"""A frame's spatial velocity and acceleration, its Jacobian's time variation dJ/dt, and
their derivatives (Pinocchio's getFrameVelocity, getFrameAcceleration,
getFrameClassicalAcceleration, getFrameJacobianTimeVariation, getFrameVelocityDerivatives,
getFrameAccelerationDerivatives), each in one pass over the joints of the frame's support.

Symbols (spatial.py's and kinematics_derivatives.py's glossary): the frame f hangs on joint
j at iMf (frames.py); oMf = (R, p) its world placement. fk.py's pass leaves, in world
axes at the world origin, v_k, a_k (a_0 = -g: gravity included, removed where a frame
acceleration is read) and the dof columns S_m. A frame is rigidly attached to body j, so
its motion at the world origin is v_j, a_j, and in the three references (frames.py's
jacobian_column, written E(m)):
  WORLD                E(m) = m
  LOCAL_WORLD_ALIGNED  E(m) = [m_lin + m_ang x p; m_ang]  (at the frame origin, world axes)
  LOCAL                E(m) = oMf^-1 m
Classical acceleration (Pinocchio's, in any reference): c = E(a) + [w x v_lin; 0] with
(v_lin, w) = E(v).

Derivatives. For a dof m on the support (j or an ancestor), kinematics_derivatives.py's
closed forms give d v_j / dq_m, d a_j / dq_m ... at the world origin (dv, da, dav). E
itself moves with q: d oMf / dq_m = S_m x oMf, so
  LOCAL                d E(v)/dq_m = oMf^-1 (dv - S_m x v_j)
  LOCAL_WORLD_ALIGNED  d E(v)/dq_m = E(dv) + [v_ang x dp/dq_m; 0],  dp/dq_m = E(S_m)_lin
and the same for a (gravity excluded): the derivatives of the values the getters return
(checked by complex step). The spatial derivatives follow Pinocchio's
getFrame*Derivatives, which in LOCAL_WORLD_ALIGNED hold the frame origin fixed: they leave
out v_ang x dp/dq_m and a_ang x dp/dq_m in dv_dq and da_dq (getter_column; the convention
of kinematics_derivatives' joints; a contact in that frame adds them). The classical
acceleration's derivatives have no Pinocchio getter and are the true ones (the origin
moving), which a point contact's drift needs. Pinocchio's WORLD and LOCAL_WORLD_ALIGNED
da_dq differ from the derivative in the columns of a multi-dof joint that has a parent
(kinematics_derivatives.py's note); rbdiff's are the derivative there.
d/dv and d/da do not move E: E(S_m), E(dav). Classical: the product rule,
  dc = dE(a)_lin + dE(v)_ang x v_lin + w x dE(v)_lin.

dJ/dt: column m of the world Jacobian is S_m = oX_k S_m^local (k: m's joint), so
dS_m/dt = v_k x S_m (Pinocchio's data.dJ), and
  WORLD                dS_m/dt
  LOCAL                oMf^-1 (dS_m/dt - v_j x S_m)
  LOCAL_WORLD_ALIGNED  E(dS_m/dt) + [S_m_ang x pdot; 0],  pdot = E(v_j)_lin
(the true time derivatives, as Pinocchio). dJ v + J a is E(a_j) in WORLD and LOCAL and the
classical acceleration in LOCAL_WORLD_ALIGNED.

Outputs are written whole (columns off the support zero)."""

from ..model.layout import MF_GRAVITY, MI_IV, MI_NV, MI_PARENT
from .fk import (acceleration_joint, init_universe, origin_at_base, placement_pass_joint,
                 velocity_joint)
from .frames import jacobian_column, joint_frame_pose, on_support
from .jit import helper, kernel
from .kinematics_derivatives import (LOCAL, LOCAL_WORLD_ALIGNED, WORLD, at_point, store_column,
                                     xinv)
from .rnea_chain_rule import ld6, mcr, st6, tadd, tsub
from .workspace import D_S, W_A, W_V


# ---- the pass over the support ---------------------------------------------------------

@helper
def support_motion(mi, mf, j, q, v, a, reference, ws):
    """Placements, dof columns S and velocities (accelerations too unless a is None, a
    branch pruned at compile time) of joint j and its ancestors, world frame (its
    origin at the base unless reference is WORLD: at the frame, the base's position
    does not enter)."""
    init_universe(mf, ws)
    if reference != WORLD:
        origin_at_base(mi, mf, q, ws)
    for k in range(1, j + 1):
        if on_support(mi, k, j):
            placement_pass_joint(mi, mf, k, q, ws)
            velocity_joint(mi, k, v, ws)
            if a is not None:
                acceleration_joint(mi, k, a, ws)


@helper
def body_acceleration(mf, ws, j):
    """a_j at the world origin with gravity excluded (a_0 = -g adds -g to every a_k)."""
    a = ws[j, W_A:W_A + 6]
    return (a[0] + mf[0, MF_GRAVITY], a[1] + mf[0, MF_GRAVITY + 1],
            a[2] + mf[0, MF_GRAVITY + 2], a[3], a[4], a[5])


@helper
def classical(acc, vel):
    """acc + [w x v_lin; 0] for vel = (v_lin, w), both in one reference."""
    return (acc[0] + vel[4] * vel[2] - vel[5] * vel[1],
            acc[1] + vel[5] * vel[0] - vel[3] * vel[2],
            acc[2] + vel[3] * vel[1] - vel[4] * vel[0],
            acc[3], acc[4], acc[5])


@helper
def classical_column(dacc, dvel, vel):
    """The derivative of classical(acc, vel) from the columns dacc, dvel (same reference):
    dacc_lin + dw x v_lin + w x dv_lin."""
    return (dacc[0] + dvel[4] * vel[2] - dvel[5] * vel[1] + vel[4] * dvel[2] - vel[5] * dvel[1],
            dacc[1] + dvel[5] * vel[0] - dvel[3] * vel[2] + vel[5] * dvel[0] - vel[3] * dvel[2],
            dacc[2] + dvel[3] * vel[1] - dvel[4] * vel[0] + vel[3] * dvel[1] - vel[4] * dvel[0],
            dacc[3], dacc[4], dacc[5])


@helper
def moved_column(d, s, m, reference, R, p):
    """d E(m) / dq_k for the frame oMf = (R, p): d = dm/dq_k at the world origin, s = S_k,
    m the world motion (module docstring: the frame moves with dof k)."""
    if reference == LOCAL:
        return xinv(R, p, tsub(d, mcr(s, m)))
    if reference == LOCAL_WORLD_ALIGNED:
        c = at_point(p, d)
        dp = at_point(p, s)
        return (c[0] + m[4] * dp[2] - m[5] * dp[1], c[1] + m[5] * dp[0] - m[3] * dp[2],
                c[2] + m[3] * dp[1] - m[4] * dp[0], c[3], c[4], c[5])
    return d


@helper
def getter_column(d, s, m, reference, R, p):
    """moved_column as Pinocchio's getters give it: in LOCAL_WORLD_ALIGNED with the frame
    origin held fixed (module docstring), so without m_ang x dp/dq_k."""
    if reference == LOCAL_WORLD_ALIGNED:
        return jacobian_column(d, reference, R, p)
    return moved_column(d, s, m, reference, R, p)


@helper
def time_variation_column(ds, s, vj, pdot, reference, R, p):
    """d/dt of the Jacobian column E(s) of the frame oMf = (R, p) on body j: ds = dS/dt,
    vj body j's velocity, pdot the frame origin's (module docstring)."""
    if reference == LOCAL:
        return xinv(R, p, tsub(ds, mcr(vj, s)))
    if reference == LOCAL_WORLD_ALIGNED:
        c = at_point(p, ds)
        return (c[0] + s[4] * pdot[2] - s[5] * pdot[1], c[1] + s[5] * pdot[0] - s[3] * pdot[2],
                c[2] + s[3] * pdot[1] - s[4] * pdot[0], c[3], c[4], c[5])
    return ds


@helper
def zero_columns(out):
    for r in range(6):
        for m in range(out.shape[1]):
            out[r, m] = 0.0


# ---- values ----------------------------------------------------------------------------

@kernel
def frame_velocity(mi, mf, fparent, fmf, q, v, frame, reference, ws, out):
    """out (6,): the frame's spatial velocity [linear, angular] in ``reference``."""
    j = fparent[frame]
    support_motion(mi, mf, j, q, v, None, reference, ws)
    R, p = joint_frame_pose(ws, j, fmf[frame])
    st6(jacobian_column(ws[j, W_V:W_V + 6], reference, R, p), out)


@kernel
def frame_acceleration(mi, mf, fparent, fmf, q, v, a, frame, reference, classic, ws, out):
    """out (6,): the frame's spatial acceleration (gravity excluded) in ``reference``, or
    its classical acceleration when ``classic``."""
    j = fparent[frame]
    support_motion(mi, mf, j, q, v, a, reference, ws)
    R, p = joint_frame_pose(ws, j, fmf[frame])
    acc = jacobian_column(body_acceleration(mf, ws, j), reference, R, p)
    if classic:
        acc = classical(acc, jacobian_column(ws[j, W_V:W_V + 6], reference, R, p))
    st6(acc, out)


@kernel
def frame_jacobian_time_variation(mi, mf, fparent, fmf, q, v, frame, reference, ws, dJ):
    """dJ (6, nv): the time derivative of the frame's Jacobian in ``reference``."""
    n = mi[0, 0]
    j = fparent[frame]
    zero_columns(dJ)
    support_motion(mi, mf, j, q, v, None, reference, ws)
    R, p = joint_frame_pose(ws, j, fmf[frame])
    vj = ld6(ws[j, W_V:W_V + 6])
    pdot = at_point(p, vj)
    k = j
    while k > 0:
        vk = ld6(ws[k, W_V:W_V + 6])
        for d in range(mi[k, MI_IV], mi[k, MI_IV] + mi[k, MI_NV]):
            s = ld6(ws[n + 1 + d, D_S:D_S + 6])
            store_column(time_variation_column(mcr(vk, s), s, vj, pdot, reference, R, p),
                         dJ, d)
        k = mi[k, MI_PARENT]


# ---- derivatives -----------------------------------------------------------------------

@kernel
def frame_velocity_derivatives(mi, mf, fparent, fmf, q, v, frame, reference, ws,
                               dv_dq, dv_dv):
    """dv_dq, dv_dv (6, nv): the derivatives of frame_velocity's value."""
    support_motion(mi, mf, fparent[frame], q, v, None, reference, ws)
    placed_velocity_derivatives(mi, fparent, fmf, frame, reference, ws, dv_dq, dv_dv)


@kernel
def placed_velocity_derivatives(mi, fparent, fmf, frame, reference, ws, dv_dq, dv_dv):
    """frame_velocity_derivatives on a workspace whose support placements, S and v an
    earlier pass left."""
    n = mi[0, 0]
    j = fparent[frame]
    zero_columns(dv_dq)
    zero_columns(dv_dv)
    R, p = joint_frame_pose(ws, j, fmf[frame])
    vj = ld6(ws[j, W_V:W_V + 6])
    k = j
    while k > 0:
        dvl = tsub(ld6(ws[mi[k, MI_PARENT], W_V:W_V + 6]), vj)
        for d in range(mi[k, MI_IV], mi[k, MI_IV] + mi[k, MI_NV]):
            s = ld6(ws[n + 1 + d, D_S:D_S + 6])
            store_column(getter_column(mcr(dvl, s), s, vj, reference, R, p), dv_dq, d)
            store_column(jacobian_column(s, reference, R, p), dv_dv, d)
        k = mi[k, MI_PARENT]


@kernel
def frame_acceleration_derivatives(mi, mf, fparent, fmf, q, v, a, frame, reference, classic,
                                   ws, dv_dq, da_dq, da_dv, da_da):
    """dv_dq, da_dq, da_dv, da_da (6, nv): the derivatives of frame_velocity's and
    frame_acceleration's values (the classical acceleration's when ``classic``; dv_dq
    stays the spatial velocity's)."""
    support_motion(mi, mf, fparent[frame], q, v, a, reference, ws)
    placed_acceleration_derivatives(mi, mf, fparent, fmf, frame, reference, classic, ws,
                                    dv_dq, da_dq, da_dv, da_da)


@kernel
def placed_acceleration_derivatives(mi, mf, fparent, fmf, frame, reference, classic, ws,
                                    dv_dq, da_dq, da_dv, da_da):
    """frame_acceleration_derivatives on a workspace whose support placements, S, v and a
    an earlier pass left (ABA's, or contact dynamics' at its solution)."""
    n = mi[0, 0]
    j = fparent[frame]
    zero_columns(dv_dq)
    zero_columns(da_dq)
    zero_columns(da_dv)
    zero_columns(da_da)
    R, p = joint_frame_pose(ws, j, fmf[frame])
    vj = ld6(ws[j, W_V:W_V + 6])
    aj = body_acceleration(mf, ws, j)
    ajg = ld6(ws[j, W_A:W_A + 6])      # gravity included on both sides of a_lambda - a_j
    vel = jacobian_column(vj, reference, R, p)
    k = j
    while k > 0:
        lam = mi[k, MI_PARENT]
        vl = ld6(ws[lam, W_V:W_V + 6])
        dvl = tsub(vl, vj)
        dal = tsub(ld6(ws[lam, W_A:W_A + 6]), ajg)
        dvk = tadd(dvl, ld6(ws[k, W_V:W_V + 6]))
        for d in range(mi[k, MI_IV], mi[k, MI_IV] + mi[k, MI_NV]):
            s = ld6(ws[n + 1 + d, D_S:D_S + 6])
            dvq = mcr(dvl, s)
            daq = tadd(mcr(dal, s), mcr(dvl, mcr(vl, s)))
            cvv = jacobian_column(s, reference, R, p)
            cav = jacobian_column(mcr(dvk, s), reference, R, p)
            if classic:     # the true derivative of the returned value, the origin moving
                caq = classical_column(moved_column(daq, s, aj, reference, R, p),
                                       moved_column(dvq, s, vj, reference, R, p), vel)
                cav = classical_column(cav, cvv, vel)
            else:
                caq = getter_column(daq, s, aj, reference, R, p)
            store_column(getter_column(dvq, s, vj, reference, R, p), dv_dq, d)
            store_column(caq, da_dq, d)
            store_column(cav, da_dv, d)
            store_column(cvv, da_da, d)       # a moves neither v nor the frame: E(S)
        k = lam
