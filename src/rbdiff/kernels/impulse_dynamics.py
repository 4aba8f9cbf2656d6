"""Impulse dynamics: the velocity jump at an impact with the contacts (Pinocchio's
impulseDynamics), restitution r, through the same operational-space solve as
contact_dynamics.py (its glossary and its contact tables):

    M (v+ - v-) = J^T Lambda,   J v+ = -r J v-
    Y = M^-1 J^T,  W = J Y + damping I,  W Lambda = -(1 + r) J v-,  v+ = v- + Y Lambda

all in LOCAL (LOCAL_WORLD_ALIGNED impulses rotated at the end, as the forces there).

Derivatives (Lambda and v+ held), x = q:
    r1 = RNEA(q, 0, v+ - v-, impulses on the contact joints; no gravity),  A_q = -M^-1 dr1/dq
    r2 = J(q) v+ + r J(q) v- + damping Lambda  (the regularised row),
    dr2/dq = the frames' LOCAL velocity derivatives at v+ and v-
    dLambda/dq = -W^-1 (J A_q + dr2/dq),  dv+/dq = A_q + Y dLambda/dq
and x = v-: dLambda/dv- = -(1 + r) W^-1 J, dv+/dv- = I + Y dLambda/dv-; the damping
enters through W = J Y + damping I alone.
"""

from ..model.layout import MI_IV, MI_NV, MI_NVSUB, MI_PARENT
from .contact_dynamics import (CI_DIM, CI_FRAME, CI_ROW, add_y_times, cholesky,
                               cholesky_solve, contact_jacobian, forces_on_joints,
                               operational_space, reference_forces,
                               rotate_force_derivatives, solve_rows)
from .fk import acceleration_joint, velocity_joint
from .frame_motion import placed_velocity_derivatives
from .idsva import idsva_backward_pass, idsva_dynamics_pass
from .jit import kernel
from .kinematics_derivatives import LOCAL
from .minverse import minverse
from .workspace import W_A, W_V, W_VJ


@kernel
def impulse_solve(mi, mf, fmf, q, v, cint, r, damping, ws, F, Minv, J, Yt, W, lam, vout):
    """vout (nv,) = v+ and lam (nc,) the LOCAL impulses, with M^-1, J, Yt and W's Cholesky
    factor left in place; -1, or the first dependent row (nothing solved then)."""
    nc = J.shape[0]
    minverse(mi, mf, q, ws, F, Minv)             # places the bodies: world S in ws
    for a in range(nc):
        for m in range(J.shape[1]):
            J[a, m] = 0.0
    contact_jacobian(mi, fmf, cint, ws, J)
    operational_space(mi, cint, Minv, J, Yt, W, damping)
    for a in range(nc):
        s = 0.0 * v[0]
        for m in range(J.shape[1]):
            s += J[a, m] * v[m]
        lam[a] = -(1.0 + r) * s
    bad = cholesky(W, nc)
    if bad >= 0:
        return bad
    cholesky_solve(W, nc, lam)
    for i in range(vout.shape[0]):
        vout[i] = v[i]
    for a in range(nc):
        y = Yt[a]
        x = lam[a]
        for i in range(vout.shape[0]):
            vout[i] += x * y[i]
    return -1


@kernel
def impulse_dynamics(mi, mf, fmf, q, v, cint, r, damping, ws, F, Minv, J, Yt, W, lam, vout,
                     impulses):
    """v+ (nv,) and the impulses (nc,) in each contact's reference; -1 or the first
    dependent row."""
    bad = impulse_solve(mi, mf, fmf, q, v, cint, r, damping, ws, F, Minv, J, Yt, W, lam,
                        vout)
    if bad < 0:
        reference_forces(fmf, cint, ws, lam, impulses)
    return bad


@kernel
def impulse_dynamics_derivatives(mi, mf, fparent, fmf, q, v, cint, r, damping, ws, F, Minv,
                                 J, Yt, W, lam, S3, D6, G, fc, dv, vout, impulses,
                                 dv_dq, dv_dv, di_dq, di_dv):
    """impulse_dynamics (damping >= 0: the regularised solution) and its derivatives
    (module docstring); dv (nv,) scratch. -1 or the first dependent row. The bodies are
    placed once (by the solve's M^-1): IDSVA and the frames' velocity derivatives run on
    those placements."""
    bad = impulse_local_derivatives(mi, mf, fparent, fmf, q, v, cint, r, damping, ws, F,
                                    Minv, J, Yt, W, lam, S3, D6, G, fc, dv, vout, impulses,
                                    dv_dq, dv_dv, di_dq, di_dv)
    if bad < 0:
        rotate_force_derivatives(mi, fmf, cint, ws, impulses, di_dq, di_dv, di_dv[:0])
    return bad


@kernel
def impulse_local_derivatives(mi, mf, fparent, fmf, q, v, cint, r, damping, ws, F, Minv, J,
                              Yt, W, lam, S3, D6, G, fc, dv, vout, impulses, dv_dq, dv_dv,
                              di_dq, di_dv):
    """impulse_dynamics_derivatives with the impulse blocks left in LOCAL (those of lam,
    the LOCAL impulses; ``impulses`` in each reference), fc the impulses on the joints,
    dv = v+ - v-, M^-1, J, Yt and W's factor as impulse_solve leaves them (the contracted
    second derivatives build on all of it)."""
    nc = J.shape[0]
    nv = J.shape[1]
    bad = impulse_solve(mi, mf, fmf, q, v, cint, r, damping, ws, F, Minv, J, Yt, W, lam,
                        vout)
    if bad >= 0:
        return bad
    reference_forces(fmf, cint, ws, lam, impulses)
    forces_on_joints(fmf, cint, None, lam, fc)
    for i in range(nv):
        dv[i] = vout[i] - v[i]
    # IDSVA at v = 0, a = v+ - v-, no gravity (a_0 = 0), the impulses on their bodies
    for c in range(6):
        ws[0, W_V + c] = 0.0
        ws[0, W_A + c] = 0.0
    for i in range(1, mi[0, 0] + 1):
        for c in range(6):
            ws[i, W_V + c] = 0.0
            ws[i, W_VJ + c] = 0.0
        acceleration_joint(mi, i, dv, ws)
    idsva_dynamics_pass(mi, mf, fc, ws)
    idsva_backward_pass(mi, ws, S3[0], S3[1], S3[2])
    neg_minv_mul_branches(mi, Minv, S3[0], dv_dq, S3[2, 0])
    for a in range(nc):
        for m in range(nv):
            G[0, a, m] = 0.0
    for w in range(1 if r == 0.0 else 2):       # J(q) v- only with restitution
        c = 1.0 if w == 0 else r
        for i in range(1, mi[0, 0] + 1):
            velocity_joint(mi, i, vout if w == 0 else v, ws)
        for k in range(cint.shape[0]):
            dim = cint[k, CI_DIM]
            r0 = cint[k, CI_ROW]
            placed_velocity_derivatives(mi, fparent, fmf, cint[k, CI_FRAME], LOCAL, ws,
                                        D6[0], D6[1])
            for a in range(dim):
                for m in range(nv):
                    G[0, r0 + a, m] += c * D6[0, a, m]
    add_jacobian_times(J, dv_dq, G[0])
    solve_rows(W, nc, G[0], -1.0, di_dq)
    add_y_times(Yt, di_dq, dv_dq)
    solve_rows(W, nc, J, -(1.0 + r), di_dv)
    for i in range(nv):
        for m in range(nv):
            dv_dv[i, m] = 0.0
        dv_dv[i, i] = 1.0
    add_y_times(Yt, di_dv, dv_dv)
    return -1


@kernel
def add_jacobian_times(J, A, out):
    """out (nc, nv) += J (nc, nv) A (nv, nv)."""
    for a in range(J.shape[0]):
        for s in range(J.shape[1]):
            c = J[a, s]
            if c != 0.0:
                for m in range(A.shape[1]):
                    out[a, m] += c * A[s, m]


@kernel
def neg_minv_mul_branches(mi, Minv, B, C, buf):
    """C (nv, nv) = -Minv B for symmetric Minv and B zero outside the branch pattern
    (IDSVA's dtau_dq): aba_derivatives.neg_minv_mul_tree for one matrix (the impulse
    derivatives have no v block to form beside it). buf: (nv,) scratch."""
    nv = Minv.shape[0]
    for jt in range(1, mi[0, 0] + 1):
        iv = mi[jt, MI_IV]
        for j in range(iv, iv + mi[jt, MI_NV]):
            for c in range(nv):
                buf[c] = 0.0
            a = jt
            while a > 0:        # the ancestors' dofs (jt's own included)
                for k in range(mi[a, MI_IV], mi[a, MI_IV] + mi[a, MI_NV]):
                    b = B[k, j]
                    row = Minv[k]
                    for c in range(nv):
                        buf[c] += b * row[c]
                a = mi[a, MI_PARENT]
            for k in range(iv + mi[jt, MI_NV], iv + mi[jt, MI_NVSUB]):     # descendants
                b = B[k, j]
                row = Minv[k]
                for c in range(nv):
                    buf[c] += b * row[c]
            for c in range(nv):
                C[c, j] = -buf[c]
