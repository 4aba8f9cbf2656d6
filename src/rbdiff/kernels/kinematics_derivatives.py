"""Derivatives of every joint's spatial velocity and acceleration with respect to q, v
and a (Carpentier & Mansard 2018 sec. III-D: the motion sets of the RNEA chain-rule
forward pass, Alg. 2 lines 3 and 5, summed here in closed form). As Pinocchio, in two
steps: fk.kinematics_pass leaves the kinematics state in the workspace
(computeForwardKinematicsDerivatives), joint_derivatives reads one joint's derivatives
from it (getJoint{Velocity,Acceleration}Derivatives).

World frame (reference WORLD, Pinocchio's pin.WORLD): v_i and a_i are body i's spatial
velocity and acceleration expressed at the world origin in world axes (a_i = d v_i / dt,
gravity excluded; it cancels in every derivative there). For a dof m of an ancestor
joint of i, or of joint i itself (lambda = the parent of m's joint, j = m's joint), the
recursion sums to
  dv_i/dq_m = (v_lambda - v_i) x S_m                      dv_i/dv_m = da_i/da_m = S_m
  da_i/dq_m = (a_lambda - a_i) x S_m + (v_lambda - v_i) x (v_lambda x S_m)
  da_i/dv_m = (v_j + v_lambda - v_i) x S_m
and every other column is zero.
LOCAL: the derivatives of X_i^-1 v_i and X_i^-1 a_i (body frame): the world ones minus
S_m x v_i (resp. S_m x a_i, gravity excluded), mapped by X_i^-1, because the body frame
itself moves with dof m.
LOCAL_WORLD_ALIGNED: Pinocchio's convention: the world-frame derivatives re-expressed at
joint i's origin p_i with world axes (linear part + angular x p_i), p_i held fixed. This
is not the derivative of getVelocity(..., LOCAL_WORLD_ALIGNED) itself, which would add
omega_i x dp_i/dq_m to dv_dq.

Note (checked against central differences of Pinocchio's own forwardKinematics):
Pinocchio 3/4's getJointAccelerationDerivatives WORLD and LOCAL_WORLD_ALIGNED use
v_j x S_m where (v_lambda x S_m) belongs in da_dq; the two differ for the columns of a
multi-dof joint (spherical, free-flyer) that has a parent. We return the derivative.
"""

from ..model.layout import MF_GRAVITY, MI_IV, MI_NV, MI_PARENT
from .fk import (acceleration_joint, init_universe, kinematics_pass, placement_pass_joint,
                 velocity_joint)
from .jit import helper, kernel
from .rnea_chain_rule import ld6, mcr, tadd, tsub
from .workspace import D_S, W_A, W_P, W_R, W_T, W_V

STATE_WIDTH = W_T + 9   # the columns fk.kinematics_pass writes: the state the getters read

WORLD = 0
LOCAL = 1
LOCAL_WORLD_ALIGNED = 2


@helper
def xinv(R, p, m):
    """X^-1 m for the placement (R, p) (9- and 3-tuples): R^T (v - p x w), R^T w."""
    w0, w1, w2 = m[3], m[4], m[5]
    l0 = m[0] - (p[1] * w2 - p[2] * w1)
    l1 = m[1] - (p[2] * w0 - p[0] * w2)
    l2 = m[2] - (p[0] * w1 - p[1] * w0)
    return (R[0] * l0 + R[3] * l1 + R[6] * l2,
            R[1] * l0 + R[4] * l1 + R[7] * l2,
            R[2] * l0 + R[5] * l1 + R[8] * l2,
            R[0] * w0 + R[3] * w1 + R[6] * w2,
            R[1] * w0 + R[4] * w1 + R[7] * w2,
            R[2] * w0 + R[5] * w1 + R[8] * w2)


@helper
def at_point(p, m):
    """The motion m (at the world origin) at the point p, same axes: v + w x p."""
    return (m[0] + m[4] * p[2] - m[5] * p[1],
            m[1] + m[5] * p[0] - m[3] * p[2],
            m[2] + m[3] * p[1] - m[4] * p[0],
            m[3], m[4], m[5])


@helper
def store_column(t, out, m):
    """out[:, m] = t (t a 6-tuple; out (6, n): a Jacobian, a derivative matrix)."""
    out[0, m] = t[0]
    out[1, m] = t[1]
    out[2, m] = t[2]
    out[3, m] = t[3]
    out[4, m] = t[4]
    out[5, m] = t[5]


@helper
def write_columns(m, s, dv, da, dav, reference, R, p, vi, ai,
                  dv_dq, dv_dv, da_dq, da_dv, da_da):
    """Column m of a joint's five (6, nv) derivatives in the reference frame asked for
    (R, p, vi, ai: the joint's placement, velocity and acceleration, gravity excluded)."""
    if reference == LOCAL:
        sl = xinv(R, p, s)
        store_column(xinv(R, p, tsub(dv, mcr(s, vi))), dv_dq, m)
        store_column(sl, dv_dv, m)
        store_column(xinv(R, p, tsub(da, mcr(s, ai))), da_dq, m)
        store_column(xinv(R, p, dav), da_dv, m)
        store_column(sl, da_da, m)
    elif reference == LOCAL_WORLD_ALIGNED:
        sl = at_point(p, s)
        store_column(at_point(p, dv), dv_dq, m)
        store_column(sl, dv_dv, m)
        store_column(at_point(p, da), da_dq, m)
        store_column(at_point(p, dav), da_dv, m)
        store_column(sl, da_da, m)
    else:
        store_column(dv, dv_dq, m)
        store_column(s, dv_dv, m)
        store_column(da, da_dq, m)
        store_column(dav, da_dv, m)
        store_column(s, da_da, m)


@helper
def joint_frame_state(mf, i, ws):
    """Joint i's world placement (R, p), velocity v_i and acceleration a_i with gravity
    excluded (a_0 = -g adds -g to every a_i)."""
    vi = ld6(ws[i, W_V:W_V + 6])
    a = ws[i, W_A:W_A + 6]
    ai = (a[0] + mf[0, MF_GRAVITY], a[1] + mf[0, MF_GRAVITY + 1],
          a[2] + mf[0, MF_GRAVITY + 2], a[3], a[4], a[5])
    Rw = ws[i, W_R:W_R + 9]
    R = (Rw[0], Rw[1], Rw[2], Rw[3], Rw[4], Rw[5], Rw[6], Rw[7], Rw[8])
    p = (ws[i, W_P], ws[i, W_P + 1], ws[i, W_P + 2])
    return R, p, vi, ai


@helper
def support_columns(mi, i, reference, ws, R, p, vi, ai, dv_dq, dv_dv, da_dq, da_dv, da_da):
    """Joint i's columns from the closed forms of the module docstring (no records): for
    every dof m of a joint j on i's support, lambda = j's parent, world-frame values."""
    n = mi[0, 0]
    aiw = ld6(ws[i, W_A:W_A + 6])      # gravity included on both sides of a_lambda - a_i
    j = i
    while j > 0:
        lam = mi[j, MI_PARENT]
        vl = ld6(ws[lam, W_V:W_V + 6])
        dvl = tsub(vl, vi)
        dal = tsub(ld6(ws[lam, W_A:W_A + 6]), aiw)
        dvj = tadd(dvl, ld6(ws[j, W_V:W_V + 6]))
        jv = mi[j, MI_IV]
        for l in range(mi[j, MI_NV]):
            s = ld6(ws[n + 1 + jv + l, D_S:D_S + 6])
            write_columns(jv + l, s, mcr(dvl, s), tadd(mcr(dal, s), mcr(dvl, mcr(vl, s))),
                          mcr(dvj, s), reference, R, p, vi, ai,
                          dv_dq, dv_dv, da_dq, da_dv, da_da)
        j = lam


@helper
def joint_derivatives(mi, mf, i, reference, ws, dv_dq, dv_dv, da_dq, da_dv, da_da):
    """Joint i's five (6, nv) derivatives, every entry written, from a kinematics state ws
    (fk.kinematics_pass's columns, STATE_WIDTH wide at least): Pinocchio's
    getJoint{Velocity,Acceleration}Derivatives."""
    dv_dq[:, :] = 0.0
    dv_dv[:, :] = 0.0
    da_dq[:, :] = 0.0
    da_dv[:, :] = 0.0
    da_da[:, :] = 0.0
    R, p, vi, ai = joint_frame_state(mf, i, ws)
    support_columns(mi, i, reference, ws, R, p, vi, ai, dv_dq, dv_dv, da_dq, da_dv, da_da)


@kernel
def derivatives_of_state(mi, mf, reference, ws, dv_dq, dv_dv, da_dq, da_dv, da_da):
    """Every joint's derivatives (each (njoints, 6, nv), row i joint i, row 0 the
    universe's zeros) from a kinematics state ws."""
    dv_dq[0, :, :] = 0.0
    dv_dv[0, :, :] = 0.0
    da_dq[0, :, :] = 0.0
    da_dv[0, :, :] = 0.0
    da_da[0, :, :] = 0.0
    for i in range(1, mi[0, 0] + 1):
        joint_derivatives(mi, mf, i, reference, ws, dv_dq[i], dv_dv[i], da_dq[i], da_dv[i],
                          da_da[i])


@kernel
def kinematics_derivatives(mi, mf, q, v, a, reference, ws, dv_dq, dv_dv, da_dq, da_dv, da_da):
    """dv_dq, dv_dv, da_dq, da_dv, da_da, each (njoints, 6, nv) (row i is joint i),
    every entry written. reference: WORLD, LOCAL or LOCAL_WORLD_ALIGNED; ws:
    (workspace_rows, >= STATE_WIDTH), left holding the kinematics state."""
    kinematics_pass(mi, mf, q, v, a, ws)
    derivatives_of_state(mi, mf, reference, ws, dv_dq, dv_dv, da_dq, da_dv, da_da)


@kernel
def kinematics_derivatives_of_joint(mi, mf, q, v, a, joint, reference, ws,
                                    dv_dq, dv_dv, da_dq, da_dv, da_da):
    """The five (6, nv) derivatives of joint ``joint`` alone (1..njoints-1), in one pass
    over joints 1..joint (a joint's ancestors come before it); equal to row joint of
    kinematics_derivatives."""
    init_universe(mf, ws)
    for i in range(1, joint + 1):
        placement_pass_joint(mi, mf, i, q, ws)
        velocity_joint(mi, i, v, ws)
        acceleration_joint(mi, i, a, ws)
    joint_derivatives(mi, mf, joint, reference, ws, dv_dq, dv_dv, da_dq, da_dv, da_da)
