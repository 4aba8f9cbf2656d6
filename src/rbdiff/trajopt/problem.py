"""A trajectory-optimisation problem in Crocoddyl's conventions: state x = (q, v), control
u = tau, symplectic Euler x' = f(x, u):

    a = aba(q, v, u),   v' = v + a dt,   q' = integrate(q, v' dt),

running costs multiplied by dt, the terminal cost not. Differences of states are tangent:
x (-) y = (difference(y_q, x_q), x_v - y_v).

The state Jacobians below take the tangent map of integrate and difference as the
identity, which holds for revolute, prismatic and continuous joints (their configuration
spaces are vector spaces or tori); Problem refuses other joints (spherical, free-flyer:
their Lie-group Jacobians are not implemented here, and a floating base needs contacts
this module does not model).
"""

from __future__ import annotations

import numpy as np

import rbdiff as _rbd
from ..cpu.scratch import single_call_scratch
from ..model.layout import FREE_FLYER, SPHERICAL
from .rollout import closed_loop


class Problem:
    """``Problem(model, x0, horizon, dt, running, terminal, u_lower=None, u_upper=None)``.

    x0 (nq + nv,); horizon T knots of control (T + 1 states); dt > 0; running / terminal:
    lists of cost terms (rbdiff.trajopt.costs); u_lower, u_upper (nv,) optional control
    bounds (the solver clamps its controls to them)."""

    def __init__(self, model, x0, horizon, dt, running=(), terminal=(), u_lower=None,
                 u_upper=None):
        bad = [model.names[i] for i in range(1, model.njoints)
               if int(model.joint_types[i]) in (SPHERICAL, FREE_FLYER)]
        if bad:
            raise ValueError("trajopt supports revolute, prismatic and continuous joints; "
                             f"{', '.join(bad)} are spherical or free-flyer")
        self.model = model
        self.nq, self.nv = model.nq, model.nv
        self.x0 = np.array(x0, dtype=float)
        if self.x0.shape != (self.nq + self.nv,) or not np.isfinite(self.x0).all():
            raise ValueError(f"x0: expected ({self.nq + self.nv},) finite, got "
                             f"{self.x0.shape}")
        self.T = int(horizon)
        if self.T < 1:
            raise ValueError(f"horizon: expected >= 1 knot, got {horizon}")
        self.dt = float(dt)
        if not self.dt > 0:
            raise ValueError(f"dt: expected > 0, got {dt}")
        self.running, self.terminal = list(running), list(terminal)
        for term in self.running + self.terminal:
            term.check(model)
        if any(not hasattr(t, "derivatives") for t in self.running + self.terminal):
            raise TypeError("costs: expected rbdiff.trajopt cost terms")
        self.u_lower = None if u_lower is None else np.asarray(u_lower, dtype=float)
        self.u_upper = None if u_upper is None else np.asarray(u_upper, dtype=float)
        for name, b in (("u_lower", self.u_lower), ("u_upper", self.u_upper)):
            if b is not None and b.shape != (self.nv,):
                raise ValueError(f"{name}: expected ({self.nv},), got {b.shape}")
        self._lo = np.full(self.nv, -np.inf) if u_lower is None else self.u_lower
        self._hi = np.full(self.nv, np.inf) if u_upper is None else self.u_upper
        if (self._lo > self._hi).any():
            raise ValueError("u_lower above u_upper")
        self._ws = single_call_scratch(model.njoints, model.nv)[0]   # the rollouts'

    def with_x0(self, x0):
        """The same problem from another initial state (model predictive control)."""
        return Problem(self.model, x0, self.T, self.dt, self.running, self.terminal,
                       self.u_lower, self.u_upper)

    def clamp(self, u):
        """u clipped to the control bounds (if any)."""
        if self.u_lower is not None:
            u = np.maximum(u, self.u_lower)
        if self.u_upper is not None:
            u = np.minimum(u, self.u_upper)
        return u

    def quasi_static(self, q):
        """Gravity torques at configurations q (K, nq): the default initial controls."""
        return _rbd.gravity(self.model, q)

    def rollout(self, us):
        """States (q (T+1, nq), v (T+1, nv)) from x0 under controls us (T, nv) (clamped
        to the bounds)."""
        zeros = np.zeros((self.T, self.nv))
        q, v, _ = self.closed_loop(None, None, us, zeros, None, 0.0)
        return q, v

    def closed_loop(self, q, v, us, k_ff, K_fb, alpha):
        """(q, v, u) of the policy u = clamp(us + alpha k_ff + K_fb (x (-) (q, v))) from x0
        (rollout.py); K_fb None: open loop."""
        T, nq, nv = self.T, self.nq, self.nv
        qn, vn, un = np.empty((T + 1, nq)), np.empty((T + 1, nv)), np.empty((T, nv))
        qn[0], vn[0] = self.x0[:nq], self.x0[nq:]
        fb = K_fb is not None
        closed_loop(self.model.mi, self.model.mf, self._ws, q if fb else qn, v if fb else vn,
                    us, k_ff, K_fb if fb else np.zeros((T, nv, 2 * nv)), alpha, self.dt,
                    self._lo, self._hi, fb, qn, vn, un, np.empty(2 * nv), np.empty(nv),
                    np.empty(nv))
        return qn, vn, un

    def cost(self, q, v, us):
        """Total cost of a trajectory: dt * sum of running costs + terminal cost."""
        c = self.dt * sum(t.value(self.model, q[:-1], v[:-1], us).sum() for t in self.running)
        return c + sum(t.value(self.model, q[-1:], v[-1:], None)[0] for t in self.terminal)

    def cost_derivatives(self, q, v, us):
        """(l_x (T+1, 2nv), l_u (T, nv), l_xx (T+1, 2nv, 2nv), l_uu (T, nv, nv)): running
        terms times dt at knots 0..T-1, the terminal terms at knot T."""
        T, n, nu = self.T, 2 * self.nv, self.nv
        lx, lu = np.zeros((T + 1, n)), np.zeros((T, nu))
        lxx, luu = np.zeros((T + 1, n, n)), np.zeros((T, nu, nu))
        for t in self.running:
            _, gx, gu, hxx, huu = t.derivatives(self.model, q[:-1], v[:-1], us)
            lx[:T] += self.dt * gx
            lxx[:T] += self.dt * hxx
            if gu is not None:
                lu += self.dt * gu
                luu += self.dt * huu
        for t in self.terminal:
            _, gx, _, hxx, _ = t.derivatives(self.model, q[-1:], v[-1:], None)
            lx[T] += gx[0]
            lxx[T] += hxx[0]
        return lx, lu, lxx, luu

    def dynamics_blocks(self, q, v, us, second_order=False):
        """(Pq, Pv, Pu) = (dt a_q, I + dt a_v, dt M^-1), each (T, nv, nv), at knots
        0..T-1 from one batched aba_derivatives call: the blocks of f's Jacobians
        (riccati.py); with ``second_order`` also the forward-dynamics tensors
        (a_qq, a_vv, a_qv, a_uq), each (T, nv, nv, nv) output index first, from one
        batched aba_second_order_derivatives call (DDP's lambda^T f_xx terms; f's
        curvature is a's, f being linear in a)."""
        dt = self.dt
        a_q, a_v, Minv = _rbd.aba_derivatives(self.model, q[:-1], v[:-1], us)
        a_q *= dt
        a_v *= dt
        a_v += np.eye(self.nv)
        Minv *= dt
        so = _rbd.aba_second_order_derivatives(self.model, q[:-1], v[:-1], us) \
            if second_order else None
        return a_q, a_v, Minv, so

    def dynamics_derivatives(self, q, v, us, second_order=False):
        """(F_x (T, 2nv, 2nv), F_u (T, 2nv, nv), tensors or None): f's Jacobians at knots
        0..T-1 assembled from dynamics_blocks (x' = (q + dt v', v'), v' = v + dt a)."""
        Pq, Pv, Pu, so = self.dynamics_blocks(q, v, us, second_order)
        T, nv, dt = self.T, self.nv, self.dt
        Fx = np.empty((T, 2 * nv, 2 * nv))
        Fu = np.empty((T, 2 * nv, nv))
        Fx[:, nv:, :nv] = Pq
        Fx[:, nv:, nv:] = Pv
        Fu[:, nv:] = Pu
        Fx[:, :nv, :nv] = np.eye(nv) + dt * Pq
        Fx[:, :nv, nv:] = dt * Pv
        Fu[:, :nv] = dt * Pu
        return Fx, Fu, so
