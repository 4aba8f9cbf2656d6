"""The closed-loop rollout of a line-search trial, compiled: for t = 0..T-1

    u_t = clamp(u_bar_t + alpha k_t + K_t (x_t (-) x_bar_t)),
    a = aba(q_t, v_t, u_t),  v_{t+1} = v_t + a dt,  q_{t+1} = integrate(q_t, v_{t+1} dt),

on rbdiff's own compiled entries (cpu/single.py), so a trial costs no Python per knot.
``feedback`` False drops the K term (an open-loop rollout of the controls).
"""

from ..cpu.single import aba_one, difference_one, integrate_one
from ..kernels.jit import entry


@entry
def closed_loop(mi, mf, ws, q, v, us, k_ff, K_fb, alpha, dt, lower, upper, feedback,
                qn, vn, un, dx, qdd, dq):
    """qn (T+1, nq), vn (T+1, nv), un (T, nv) from qn[0], vn[0] (set by the caller);
    dx (2nv,), qdd, dq (nv,) scratch; lower / upper (nv,) bounds (+-inf for none).
    Raises ValueError where aba refuses a state (NaN, singular M)."""
    T, nv = us.shape
    for t in range(T):
        if feedback:
            difference_one(mi, q[t], qn[t], dx[:nv])
            for i in range(nv):
                dx[nv + i] = vn[t, i] - v[t, i]
        for i in range(nv):
            u = us[t, i] + alpha * k_ff[t, i]
            if feedback:
                for j in range(2 * nv):
                    u += K_fb[t, i, j] * dx[j]
            un[t, i] = min(max(u, lower[i]), upper[i])
        aba_one(mi, mf, qn[t], vn[t], un[t], None, ws, qdd)
        for i in range(nv):
            vn[t + 1, i] = vn[t, i] + dt * qdd[i]
            dq[i] = dt * vn[t + 1, i]
        integrate_one(mi, qn[t], dq, qn[t + 1])
