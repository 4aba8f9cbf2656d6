"""The closed-loop rollout of a line-search trial, compiled: for t = 0..T-1

    x_t = x_next (+) gap fs_t                       (FDDP's infeasible trial; gap 0: x_next)
    u_t = clamp(u_bar_t + alpha k_t + K_t (x_t (-) x_bar_t)),
    tau = [0; u_t] (the actuated rows: the last nu of nv),
    free knot:    a = aba(q_t, v_t, tau)
    contact knot: a = contact_dynamics(q_t, v_t, tau, contacts_t) (forces kept)
    then          v' = v_t + a dt,  q' = integrate(q_t, v' dt)
    impulse knot: v' = impulse_dynamics(q_t, v_t, contacts_t) (impulses kept), q' = q_t
    x_next = (q', v')

on rbdiff's own compiled entries (cpu/single.py, cpu/contacts.py), so a trial costs no
Python per knot. It calls them by address (cpu/twin.py), not linked into its own code:
the contact and impulse entries compile on a first contact or impulse knot (twin_later),
so a problem without contacts never compiles them (they made this rollout's first
compile 14 s instead of a few). (-) is the manifold difference (difference_one: free flyers and
spherical joints included). ``feedback`` False drops the K term (an open-loop rollout
of the controls); ``shoot`` evaluates every knot at the given states x_bar_t instead
(multiple shooting: the knots' x_next from the warm start, for FDDP's gaps). A knot
whose state is not finite or has an entry beyond validation.DIVERGED stops the rollout
(the knot returned): the dynamics there are meaningless, their refusals misleading.

Given ``kept`` rows, a contact knot's solve stays there (M^-1, J, Yt, W's factor, the
forces, qdd: cpu/contacts.contact_dynamics_kept), and ``kept_parts`` takes the
derivatives at an accepted trial from it (Crocoddyl's calcDiff on its calc's data), in
one call for every contact knot (an entry of its own: compiled only where it is used).
"""

import numpy as np

from ..cpu.contacts import (contact_dynamics_kept, contact_dynamics_one,
                            impulse_dynamics_one)
from ..cpu.single import aba_one, difference_one, integrate_one
from ..cpu.twin import twin, twin_later
from ..kernels.contact_dynamics import CI_DIM, kept_derivatives
from ..kernels.jit import entry, helper
from ..kernels.trajopt_costs import euler_velocity_rows
from ..kernels.workspace import W_WIDTH, workspace_rows
from ..validation import DIVERGED

FREE, CONTACT, IMPULSE = 0, 1, 2       # the knot kinds (Problem.kind)


@helper
def knot_rows(cint, s, e):
    """The constraint rows of a knot's contacts cint[s:e] (3 a point, 6 a surface)."""
    nc = 0
    for c in range(s, e):
        nc += cint[c, CI_DIM]
    return nc


@helper
def diverged(q, v):
    """A state (q, v) with an entry not finite or beyond DIVERGED."""
    for x in (q, v):
        for i in range(x.shape[0]):
            if not abs(x[i]) <= DIVERGED:
                return True
    return False


@entry
def closed_loop(mi, mf, fparent, fmf, ws, q, v, us, k_ff, K_fb, alpha, dt, lower, upper,
                feedback, kind, cstart, cint, cflt, fs, gap, shoot, qn, vn, un, qnext,
                vnext, forces, acc, kept):
    """qn (T+1, nq), vn (T+1, nv), un (T, nu), and each knot's successor qnext (T, nq),
    vnext (T, nv) and contact forces (T, ncmax) (rows past the knot's nc untouched), from
    qn[0], vn[0] (x0, set by the caller); acc (T, nv): each free or contact knot's
    acceleration (DDP's contraction needs aba(q_t, v_t, u_t)), or (0, nv): not kept;
    kept (T, >= kernels.contact_dynamics.kept_size) each contact knot's solve (its
    derivatives reuse it: problem.Kept), or (0, 0): not kept.
    kind (T,): FREE, CONTACT or IMPULSE; the contacts of knot t are the packed rows
    cint/cflt[cstart[t]:cstart[t+1]]; fs (T+1, 2nv) the gaps, used where gap != 0;
    lower / upper (nu,) bounds (+-inf for none).
    Returns -1, or the first knot t <= T whose state diverged (its dynamics not run);
    raises ValueError where the dynamics refuse a state (singular M, dependent
    contacts)."""
    T, nu = us.shape
    nv = vn.shape[1]
    off = nv - nu
    dx = np.empty(2 * nv)
    tau = np.zeros(nv)
    qdd = np.empty(nv)
    dq = np.empty(nv)
    F = np.empty((mi[0, 0] + 1, nv, 6))     # the kept contact solves' scratch
    for t in range(T + 1):
        if shoot:
            qn[t, :] = q[t]
            vn[t, :] = v[t]
        elif t > 0:
            if gap != 0.0:
                for i in range(nv):
                    dq[i] = gap * fs[t, i]
                    vn[t, i] = vnext[t - 1, i] + gap * fs[t, nv + i]
                twin(integrate_one, (mi, qnext[t - 1], dq, qn[t]))
            else:
                qn[t, :] = qnext[t - 1]
                vn[t, :] = vnext[t - 1]
        elif gap != 0.0:                      # x0 (+) gap fs_0
            for i in range(nv):
                dq[i] = gap * fs[0, i]
                vn[0, i] += gap * fs[0, nv + i]
            twin(integrate_one, (mi, qn[0].copy(), dq, qn[0]))
        if diverged(qn[t], vn[t]):
            return t
        if t == T:
            break
        if feedback:
            twin(difference_one, (mi, q[t], qn[t], dx[:nv]))
            for i in range(nv):
                dx[nv + i] = vn[t, i] - v[t, i]
        for i in range(nu):
            u = us[t, i] + alpha * k_ff[t, i]
            if feedback:
                for j in range(2 * nv):
                    u += K_fb[t, i, j] * dx[j]
            un[t, i] = min(max(u, lower[i]), upper[i])
            tau[off + i] = un[t, i]
        s, e = cstart[t], cstart[t + 1]
        nc = knot_rows(cint, s, e)
        if kind[t] == IMPULSE:
            twin_later(impulse_dynamics_one, (mi, mf, fparent, fmf, qn[t], vn[t], cint[s:e],
                                              cflt[s:e], 0.0, 0.0, ws, vnext[t],
                                              forces[t, :nc]))
            qnext[t, :] = qn[t]
            continue
        if kind[t] == CONTACT and kept.shape[0] > 0:
            twin_later(contact_dynamics_kept, (mi, mf, fparent, fmf, qn[t], vn[t], tau,
                                               cint[s:e], cflt[s:e], ws, F, kept[t],
                                               qdd, forces[t, :nc]))
        elif kind[t] == CONTACT:
            twin_later(contact_dynamics_one, (mi, mf, fparent, fmf, qn[t], vn[t], tau, None,
                                              cint[s:e], cflt[s:e], 0.0, ws, qdd,
                                              forces[t, :nc]))
        else:
            twin(aba_one, (mi, mf, qn[t], vn[t], tau, None, ws, qdd))
        for i in range(nv):
            vnext[t, i] = vn[t, i] + dt * qdd[i]
            dq[i] = dt * vnext[t, i]
        if acc.shape[0] > 0:
            acc[t, :] = qdd
        twin(integrate_one, (mi, qn[t], dq, qnext[t]))
    return -1


@entry
def kept_parts(mi, mf, fparent, fmf, q, v, us, kept, knots, cstart, cint, cflt, dt, Pq, Pv,
               Pu, df_x, df_u, first):
    """At the contact knots t = knots[k] of the run that kept its solves in kept (T, ...)
    (closed_loop's, at q, v, us): contact_dynamics_derivatives from kept[t] (not solved
    again), the Euler step's velocity rows Pq[t], Pv[t], Pu[t] (euler_velocity_rows), and
    where given (a first axis > 0) the forces' derivatives df_x[t, :nc] = [df_dq, df_dv],
    df_u[t, :nc] = df_dtau's actuated columns, and first[t, b] = [dqdd_db; df_db] for
    b = q, v, tau (Problem._dynamics_parts' route, in one call instead of one a phase).
    The caller (Problem) checks shapes: kept, Pq, Pv, Pu, df_x, df_u, first (T, ...)."""
    nv, nu = v.shape[1], us.shape[1]
    off = nv - nu
    ncmax = 1
    for k in range(knots.shape[0]):
        ncmax = max(ncmax, knot_rows(cint, cstart[knots[k]], cstart[knots[k] + 1]))
    ws = np.empty((workspace_rows(mi), W_WIDTH))
    F = np.empty((0, nv, 6))                # the solve's scratch: not solved again
    S3, D6 = np.empty((3, nv, nv)), np.empty((4, 6, nv))
    fc, qdd2 = np.empty((mi[0, 0] + 1, 6)), np.empty(nv)
    A = np.empty((3, 1, nv, nv))            # a knot's dqdd_dq, dqdd_dv, dqdd_dtau
    gbuf, fbuf = np.empty(2 * ncmax * nv), np.empty(3 * ncmax * nv)
    one = np.empty(1, np.int64)
    tau = np.zeros(nv)
    for k in range(knots.shape[0]):
        t = knots[k]
        s, e = cstart[t], cstart[t + 1]
        nc = knot_rows(cint, s, e)
        G = gbuf[:2 * nc * nv].reshape((2, nc, nv))
        Fd = fbuf[:3 * nc * nv].reshape((3, nc, nv))
        for i in range(nu):
            tau[off + i] = us[t, i]
        kept_derivatives(mi, mf, fparent, fmf, q[t], v[t], tau, cint[s:e], cflt[s:e], ws, F,
                         kept[t], S3, D6, G, fc, qdd2, A[0, 0], A[1, 0], A[2, 0], Fd[0],
                         Fd[1], Fd[2])
        one[0] = t
        euler_velocity_rows(one, dt, off, A[0], A[1], A[2], Pq, Pv, Pu)
        if df_x.shape[0] > 0:
            for r in range(nc):
                for j in range(nv):
                    df_x[t, r, j] = Fd[0, r, j]
                    df_x[t, r, nv + j] = Fd[1, r, j]
                for j in range(nu):
                    df_u[t, r, j] = Fd[2, r, off + j]
        if first.shape[0] > 0:
            for b in range(3):
                first[t, b, :nv] = A[b, 0]
                first[t, b, nv:nv + nc] = Fd[b]
