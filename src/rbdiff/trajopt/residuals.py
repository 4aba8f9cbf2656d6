"""More cost terms, Crocoddyl's residual models with their activations: a term is
w a(r) of a residual r with an activation a, its derivatives the Gauss-Newton ones,

    l_x = w R_x^T a'(r),  l_u = w R_u^T a'(r),
    l_xx = w R_x^T a''(r) R_x,  l_uu = w R_u^T a''(r) R_u,  l_xu = w R_x^T a''(r) R_u,

(Crocoddyl's ResidualModelAbstract::calcCostDiff). Activations: quadratic 0.5 ||r||^2
(ActivationModelQuad), weighted 0.5 sum_i a_i r_i^2 (``weights``;
ActivationModelWeightedQuad), and the quadratic barrier 0.5 ||min(r - lb, 0)||^2 +
0.5 ||max(r - ub, 0)||^2 with a'' = 1 where r <= lb or r >= ub
(ActivationModelQuadraticBarrier; a bound that is not finite is no bound).

Every term is evaluated on the knots of a phase at once (one batched rbdiff call per
kind): q (K, nq), v (K, nv), u (K, nu) or None; targets are (3,) or stacked per knot
(K, 3) (``stacked``: Problem groups the knots whose terms differ only in their targets);
``accumulate`` adds the derivatives at the problem's rows (costs.py), ``derivatives``
returns them.
Terms that read the contact forces (``reads_forces``: ContactForce, FrictionCone,
WrenchCone) take the forces of their contact at those knots f (K, dim) and the forces'
derivatives df_dx (K, dim, 2 nv), df_du (K, dim, nu), which Problem takes from the
knot's contact dynamics (contact_dynamics_derivatives, in the contact's reference); their
``derivatives`` return l_xu too. At the terminal knot (no control, no forces) they
contribute zero, as Crocoddyl's residuals do (r = 0 inside the cone's bounds).
"""

from __future__ import annotations

import numpy as np

import rbdiff as _rbd
from ..cpu.trajopt_costs import placement_log_batch
from ..kinematics import _frame_id as _frame_index
from . import calls
from .costs import (Term, _finite, _hashable, _reference_rows, _stacked, _weight,
                    _weights, add_diagonal, add_gauss_newton, ones, per_knot)


# ---- activations ------------------------------------------------------------------------

def quad_activation(r, weights=None):
    """(a (K,), a' (K, nr), diag a'' (K, nr) or (nr,)) of 0.5 sum_i weights_i r_i^2."""
    if weights is None:
        return 0.5 * np.einsum("ki,ki->k", r, r), r, ones(r.shape[1])
    Ar = weights * r
    return 0.5 * np.einsum("ki,ki->k", Ar, r), Ar, weights


def barrier_activation(r, lower, upper):
    """(a, a', diag a'') of Crocoddyl's ActivationModelQuadraticBarrier on [lower, upper]
    (infinite bounds: none)."""
    dlo, dhi = r - lower, r - upper
    # lower <= upper: at most one of min(dlo, 0), max(dhi, 0) is nonzero, so their sum is
    # a' exactly and a = 0.5 ||a'||^2
    Ar = np.minimum(dlo, 0.0) + np.maximum(dhi, 0.0)
    Arr = ((dlo <= 0.0) | (dhi >= 0.0)).astype(float)
    return 0.5 * np.einsum("ki,ki->k", Ar, Ar), Ar, Arr


def _bounds(name, lower, upper, n):
    """Bounds (n,) each; NaN (Crocoddyl's unbounded free-flyer entries) reads as none."""
    lo = np.array(lower, dtype=float).reshape(-1)
    hi = np.array(upper, dtype=float).reshape(-1)
    if lo.shape != (n,) or hi.shape != (n,):
        raise ValueError(f"{name}: expected lower and upper bounds of {n} entries, got "
                         f"{lo.shape} and {hi.shape}")
    lo[np.isnan(lo)] = -np.inf
    hi[np.isnan(hi)] = np.inf
    bad = np.flatnonzero(lo > hi)
    if len(bad):
        i = int(bad[0])
        raise ValueError(f"{name}: infeasible bounds, lower {lo[i]} above upper {hi[i]} "
                         f"at entry {i}")
    return lo, hi


# ---- state-dependent terms -----------------------------------------------------------------

class CoMPosition(Term):
    """w a(com(q) - target) (Crocoddyl's ResidualModelCoMPosition), R_q = the centre of
    mass Jacobian (com_jacobian); target (3,); ``weights`` (3,) optional."""

    def __init__(self, target, weight=1.0, weights=None):
        self.target = _finite("CoMPosition target", target, (3,))
        self.weight = _weight(weight)
        self.weights = _weights("CoMPosition weights", weights, 3)

    def check(self, model, nu=None):
        pass

    weight_per_knot = True

    def group_key(self):
        return (type(self), _hashable(self.weights))

    def stacked(self, terms):
        return _stacked(self, terms, "target")

    def value(self, model, q, v, u):
        r = calls.center_of_mass(model, q) - self.target
        return self.weight * quad_activation(r, self.weights)[0]

    def accumulate(self, model, q, v, u, out, knots, scale):
        r = calls.center_of_mass(model, q) - self.target
        a, Ar, Arr = quad_activation(r, self.weights)
        add_gauss_newton(out, knots, scale * self.weight, Ar, Arr,
                         calls.com_jacobian(model, q))
        return self.weight * a


def _placement(name, M):
    M = np.asarray(M, dtype=float)
    if M.shape == (3, 4):
        M = np.vstack([M, [0.0, 0.0, 0.0, 1.0]])
    M = _finite(name, M, (4, 4))
    R = M[:3, :3]
    if np.abs(R.T @ R - np.eye(3)).max() > 1e-9 or np.linalg.det(R) < 0:
        raise ValueError(f"{name}: the rotation block is not a rotation")
    return M


class FramePlacement(Term):
    """w a(log6(M_ref^-1 M_frame(q))) (Crocoddyl's ResidualModelFramePlacement: the
    residual [linear, angular] in the frame's own axes), R_q = Jlog6(M_ref^-1 M) J_local;
    placement M_ref (4, 4); ``weights`` (6,) optional."""

    def __init__(self, frame, placement, weight=1.0, weights=None):
        self.frame = frame
        self.placement = _placement("FramePlacement placement", placement)
        self.weight = _weight(weight)
        self.weights = _weights("FramePlacement weights", weights, 6)

    def check(self, model, nu=None):
        model.frames[_frame_index(model, self.frame)]      # KeyError naming the frame

    weight_per_knot = True

    def group_key(self):
        return (type(self), self.frame, _hashable(self.weights))

    def stacked(self, terms):
        return _stacked(self, terms, "placement")

    def _log(self, model, q):
        K = q.shape[0]
        M = calls.frame_placement(model, q, _frame_index(model, self.frame))
        ref = self.placement if self.placement.ndim == 3 else self.placement[None]
        r, Jl = np.empty((K, 6)), np.empty((K, 6, 6))
        placement_log_batch(M, ref, r, Jl)
        return r, Jl

    def value(self, model, q, v, u):
        return self.weight * quad_activation(self._log(model, q)[0], self.weights)[0]

    def accumulate(self, model, q, v, u, out, knots, scale):
        r, Jl = self._log(model, q)
        a, Ar, Arr = quad_activation(r, self.weights)
        J = calls.frame_jacobian(model, q, _frame_index(model, self.frame), "local")
        add_gauss_newton(out, knots, scale * self.weight, Ar, Arr, Jl @ J)
        return self.weight * a


_REFERENCES = ("local", "local_world_aligned", "world")


class FrameVelocity(Term):
    """w a(v_frame(q, v) - velocity) (Crocoddyl's ResidualModelFrameVelocity), the
    frame's spatial velocity [linear, angular] in ``reference`` ("local",
    "local_world_aligned"); R_x = frame_velocity_derivatives; velocity (6,) defaults to
    zero; ``weights`` (6,) optional."""

    def __init__(self, frame, velocity=None, reference="local", weight=1.0, weights=None):
        self.frame = frame
        self.velocity = np.zeros(6) if velocity is None else \
            _finite("FrameVelocity velocity", velocity, (6,))
        if reference not in _REFERENCES[:2]:
            raise ValueError(f"FrameVelocity reference: expected 'local' or "
                             f"'local_world_aligned', got {reference!r}")
        self.reference = reference
        self.weight = _weight(weight)
        self.weights = _weights("FrameVelocity weights", weights, 6)

    def check(self, model, nu=None):
        model.frames[_frame_index(model, self.frame)]

    weight_per_knot = True

    def group_key(self):
        return (type(self), self.frame, self.reference, _hashable(self.weights))

    def stacked(self, terms):
        return _stacked(self, terms, "velocity")

    def value(self, model, q, v, u):
        r = _rbd.frame_velocity(model, q, v, self.frame, self.reference) - self.velocity
        return self.weight * quad_activation(r, self.weights)[0]

    def accumulate(self, model, q, v, u, out, knots, scale):
        r = _rbd.frame_velocity(model, q, v, self.frame, self.reference) - self.velocity
        a, Ar, Arr = quad_activation(r, self.weights)
        add_gauss_newton(out, knots, scale * self.weight, Ar, Arr,
                         np.concatenate(self._jacobians(model, q, v), axis=2))
        return self.weight * a

    def _jacobians(self, model, q, v):
        """d r / d q, d r / d v. LOCAL_WORLD_ALIGNED: the derivative of R v_local (R the
        frame's rotation), R dv_local + (d R / d q) v_local with d R / d q_k = [J_w,k]x R,
        not Pinocchio's getFrameVelocityDerivatives (which Crocoddyl's residual uses and
        which leaves out part of the rotation's derivative)."""
        dq, dv = _rbd.frame_velocity_derivatives(model, q, v, self.frame, "local")
        if self.reference == "local":
            return dq, dv
        R = _rbd.frame_placement(model, q, self.frame)[:, :3, :3]
        w = np.einsum("kij,kj->ki", R, _rbd.frame_velocity(model, q, v, self.frame,
                                                               "local")[:, :3])
        Rw = np.einsum("kij,kj->ki", R, _rbd.frame_velocity(model, q, v, self.frame,
                                                                "local")[:, 3:])
        Jw = _rbd.frame_jacobian(model, q, self.frame, "local_world_aligned")[:, 3:]
        out_q, out_v = np.empty_like(dq), np.empty_like(dv)
        for s in (slice(0, 3), slice(3, 6)):
            out_q[:, s] = R @ dq[:, s]
            out_v[:, s] = R @ dv[:, s]
        out_q[:, :3] -= np.cross(w[:, :, None], Jw, axis=1)
        out_q[:, 3:] -= np.cross(Rw[:, :, None], Jw, axis=1)
        return out_q, out_v


class StateBounds(Term):
    """w a(x (-) x_ref) with the quadratic barrier on [lower, upper] (2 nv each, tangent
    coordinates: Crocoddyl's ResidualModelState with ActivationModelQuadraticBarrier);
    x_ref defaults to (neutral, 0) (Crocoddyl's state.zero()). ``from_limits(model)``
    gives the bounds of the model's joint limits (NaN / inf: none)."""

    def __init__(self, lower, upper, weight=1.0, x_ref=None):
        self.lower, self.upper = np.asarray(lower, float), np.asarray(upper, float)
        self.weight = _weight(weight)
        self.x_ref = None if x_ref is None else np.asarray(x_ref, dtype=float)
        _bounds("StateBounds", self.lower, self.upper, self.lower.size)

    @staticmethod
    def limits(model, velocity_limits=None):
        """(lower, upper) (2 nv) of the model's position limits (each one-dof joint's
        coordinate; multi-dof joints unbounded) and ``velocity_limits`` (nv or nv - 6 for
        the actuated joints under a free flyer; None: unbounded velocities): the bounds
        of Crocoddyl's quadruped gait (its lb[1:nv+1] of state.lb, which is this for a
        free-flyer root and one-dof joints)."""
        nv = model.nv
        lo, hi = np.full(2 * nv, -np.inf), np.full(2 * nv, np.inf)
        for j in range(1, model.njoints):
            if model.nvs[j] == 1 and model.nqs[j] == 1:
                iq, iv = model.idx_q[j], model.idx_v[j]
                lo[iv], hi[iv] = model.lower_limits[iq], model.upper_limits[iq]
        if velocity_limits is not None:
            vl = np.asarray(velocity_limits, dtype=float)
            if vl.shape not in ((nv,), (nv - 6,)):
                raise ValueError(f"velocity_limits: expected ({nv},) or ({nv - 6},), got "
                                 f"{vl.shape}")
            lo[2 * nv - vl.size:] = -vl
            hi[2 * nv - vl.size:] = vl
        return lo, hi

    def check(self, model, nu=None):
        n = 2 * model.nv
        self.lower, self.upper = _bounds("StateBounds", self.lower, self.upper, n)
        if self.x_ref is None:
            self.x_ref = np.concatenate([_rbd.neutral(model), np.zeros(model.nv)])
        self.x_ref = _finite("StateBounds x_ref", self.x_ref, (model.nq + model.nv,))

    weight_per_knot = True

    def group_key(self):
        return (type(self), _hashable(self.lower), _hashable(self.upper),
                _hashable(self.x_ref))

    def stacked(self, terms):
        return self

    def _residual(self, model, q, v):
        K, nq, nv = q.shape[0], model.nq, model.nv
        r = np.empty((K, 2 * nv))
        qref = _reference_rows(self.x_ref[:nq], K)
        r[:, :nv] = calls.difference(model, qref, np.ascontiguousarray(q))
        r[:, nv:] = v - self.x_ref[nq:]
        return r, qref

    def value(self, model, q, v, u):
        r, _ = self._residual(model, q, v)
        return self.weight * barrier_activation(r, self.lower, self.upper)[0]

    def accumulate(self, model, q, v, u, out, knots, scale):
        r, qref = self._residual(model, q, v)
        a, Ar, Arr = barrier_activation(r, self.lower, self.upper)
        nv, w = model.nv, scale * self.weight
        knots = np.asarray(knots)
        # a'' (and a') vanish inside the bounds: only the knots out of them contribute
        per = per_knot(w)               # a scale per knot (Problem's mixed groups)
        act = np.flatnonzero(Arr[:, nv:].any(axis=1))
        if len(act):
            add_diagonal(out, knots[act], w[act] if per else w, Ar[act, nv:],
                         Arr[act, nv:], nv)
        act = np.flatnonzero(Arr[:, :nv].any(axis=1))
        if len(act):
            Rq = calls.difference_jacobians(model, qref[act],
                                            np.ascontiguousarray(q[act])).dq1
            add_gauss_newton(out, knots[act], w[act] if per else w, Ar[act, :nv],
                             Arr[act, :nv], Rq)
        return self.weight * a


# ---- contact-force terms -------------------------------------------------------------------

class _ForceTerm(Term):
    """A term on the forces of the contact on ``frame`` (its knots must have one)."""

    reads_forces = True
    reads_control = True

    def check(self, model, nu=None):
        model.frames[_frame_index(model, self.frame)]

    def key(self):
        return self.group_key() + (self.frame,)

    def stacked(self, terms):
        return self

    def value(self, model, q, v, u, f):
        if f is None:                   # a terminal knot: no forces, Crocoddyl's r = 0
            return np.zeros(q.shape[0])
        return self.weight * self._activation(self._residual(f))[0]

    def force_gradient(self, f):
        """dl/df (K, dim) of w a(r(f)) at the forces f (K, dim): the forces' costate,
        with which DDP contracts the forces' curvature (trajopt/curvature.py)."""
        _, Ar, _ = self._activation(self._residual(f))
        A = self._matrix(f.shape[1])
        g = np.zeros(f.shape)
        if A is None:
            g[:] = self.weight * Ar
        else:
            g[:, :A.shape[1]] = self.weight * (Ar @ A)
        return g

    def accumulate(self, model, q, v, u, f, df_dx, df_du, out, knots, scale):
        if f is None:                   # a terminal knot: no forces, Crocoddyl's r = 0
            return np.zeros(q.shape[0])
        a, Ar, Arr = self._activation(self._residual(f))
        A = self._matrix(f.shape[1])
        # a barrier's rows inside the cone have a' = a'' = 0: only the other knots count
        Arr = Arr if Arr.shape == Ar.shape else np.broadcast_to(Arr, Ar.shape)
        act = np.flatnonzero(Arr.any(axis=1))
        if len(act):
            if len(act) == len(Arr):    # every knot: views, not copies
                act = slice(None)
            Arr = Arr[act]
            Rx, Ru = df_dx[act], df_du[act]
            if A is not None:
                Rx = A @ Rx[:, :A.shape[1]]     # matmul: einsum's loops ran 14x slower
                Ru = A @ Ru[:, :A.shape[1]]
            add_gauss_newton(out, np.asarray(knots)[act], scale * self.weight, Ar[act],
                             Arr, Rx, 0, Ru)
        return self.weight * a


class ContactForce(_ForceTerm):
    """w a(f - force) of the contact on ``frame`` (Crocoddyl's ResidualModelContactForce
    for a 3D (dim 3) or 6D ([linear, angular]) contact, in the contact's reference);
    force defaults to zero; ``weights`` (dim,) optional."""

    def __init__(self, frame, force=None, weight=1.0, weights=None):
        self.frame = frame
        self.force = None if force is None else np.asarray(force, dtype=float)
        if self.force is not None and (self.force.shape not in ((3,), (6,))
                                       or not np.isfinite(self.force).all()):
            raise ValueError(f"ContactForce force: expected 3 or 6 finite values, got "
                             f"{self.force.shape}")
        self.weight = _weight(weight)
        self.weights = None if weights is None else np.asarray(weights, dtype=float)

    def group_key(self):
        """key() without the frame: the same term on other feet (Problem groups them,
        each knot's forces read through its contact's rows)."""
        return (type(self), self.weight, _hashable(self.force), _hashable(self.weights))

    def dim_ok(self, dim):
        for name, x in (("force", self.force), ("weights", self.weights)):
            if x is not None and x.shape != (dim,):
                raise ValueError(f"ContactForce {name} on {self.frame!r}: expected "
                                 f"({dim},) for its {dim}D contact, got {x.shape}")

    def _residual(self, f):
        return f if self.force is None else f - self.force

    def _activation(self, r):
        return quad_activation(r, self.weights)

    def _matrix(self, dim):
        return None


def friction_cone_matrix(mu, rotation=None, nf=4, inner_appr=False, min_nforce=0.0,
                         max_nforce=np.inf):
    """(A (nf + 1, 3), lb, ub) of Crocoddyl's linearised friction cone
    (FrictionCone(R, mu, nf, inner_appr, min_nforce, max_nforce).A / lb / ub): nf facets
    A_i f <= 0 and the normal force within [min_nforce, max_nforce]."""
    R = np.eye(3) if rotation is None else _finite("rotation", rotation, (3, 3))
    if not (mu >= 0 and np.isfinite(mu)):
        raise ValueError(f"friction cone mu: expected a finite number >= 0, got {mu}")
    if nf < 2 or nf % 2:
        raise ValueError(f"friction cone nf: expected an even number >= 2, got {nf}")
    if not 0 <= min_nforce <= max_nforce:
        raise ValueError(f"friction cone: infeasible normal-force bounds [{min_nforce}, "
                         f"{max_nforce}]")
    theta = 2.0 * np.pi / nf
    m = mu * np.cos(0.5 * theta) if inner_appr else mu
    A = np.zeros((nf + 1, 3))
    for i in range(nf // 2):
        t = np.array([np.cos(theta * i), np.sin(theta * i), 0.0])
        A[2 * i] = (np.array([0.0, 0.0, -m]) + t) @ R.T
        A[2 * i + 1] = (np.array([0.0, 0.0, -m]) - t) @ R.T
    A[nf] = R.T[2]
    lb = np.full(nf + 1, -np.inf)
    ub = np.zeros(nf + 1)
    lb[nf], ub[nf] = min_nforce, max_nforce
    return A, lb, ub


def wrench_cone_matrix(mu, box, rotation=None, nf=4, inner_appr=True, min_nforce=0.0,
                       max_nforce=np.inf):
    """(A (nf + 13, 6), lb, ub) of Crocoddyl's wrench cone of a rectangular foot
    (WrenchCone(R, mu, box (length, width), nf, inner_appr, ...)): the friction cone on
    the force, the centre of pressure inside the box, and the yaw torque bounds."""
    R = np.eye(3) if rotation is None else _finite("rotation", rotation, (3, 3))
    box = _finite("wrench cone box", box, (2,))
    if (box <= 0).any():
        raise ValueError(f"wrench cone box: expected a positive length and width, got {box}")
    Af, lbf, ubf = friction_cone_matrix(mu, R, nf, False, min_nforce, max_nforce)
    theta = 2.0 * np.pi / nf
    m = mu * np.cos(0.5 * theta) if inner_appr else mu
    if inner_appr:
        Af = friction_cone_matrix(m, R, nf, False, min_nforce, max_nforce)[0]
    Rt = R.T
    L, W = 0.5 * box[0], 0.5 * box[1]
    A = np.zeros((nf + 13, 6))
    A[:nf + 1, :3] = Af
    A[nf + 1] = np.concatenate([-W * Rt[2], Rt[0]])
    A[nf + 2] = np.concatenate([-W * Rt[2], -Rt[0]])
    A[nf + 3] = np.concatenate([-L * Rt[2], Rt[1]])
    A[nf + 4] = np.concatenate([-L * Rt[2], -Rt[1]])
    muLW = -m * (L + W)
    for k, (sx, sy) in enumerate(((1, 1), (1, -1), (-1, 1), (-1, -1))):
        left = np.array([sx * W, sy * L, muLW]) @ Rt
        right = np.array([-sx * m, -sy * m, -1.0]) @ Rt
        A[nf + 5 + k] = np.concatenate([left, right])
        A[nf + 9 + k] = np.concatenate([left, -right])
    lb = np.full(nf + 13, -np.inf)
    ub = np.zeros(nf + 13)
    lb[nf], ub[nf] = lbf[nf], ubf[nf]
    return A, lb, ub


class FrictionCone(_ForceTerm):
    """w a(A f) of the contact on ``frame`` with Crocoddyl's quadratic barrier on the
    linearised friction cone's bounds (ResidualModelContactFrictionCone with
    FrictionCone(rotation, mu, nf, inner_appr, min_nforce, max_nforce); the linear force
    of a 6D contact). Defaults: Crocoddyl's gaits' (mu 0.7, flat ground, 4 facets, the
    outer approximation)."""

    def __init__(self, frame, mu=0.7, rotation=None, nf=4, inner_appr=False, weight=1.0,
                 min_nforce=0.0, max_nforce=np.inf):
        self.frame = frame
        self.A, self.lower, self.upper = friction_cone_matrix(
            mu, rotation, nf, inner_appr, min_nforce, max_nforce)
        # the cone's parameters (Crocoddyl's FrictionCone of the same cone: bench-mpc)
        self.cone = (mu, np.eye(3) if rotation is None else np.asarray(rotation, float),
                     int(nf), bool(inner_appr), float(min_nforce), float(max_nforce))
        self.weight = _weight(weight)

    def group_key(self):
        return (type(self), self.weight, _hashable(self.A), _hashable(self.lower),
                _hashable(self.upper))

    def dim_ok(self, dim):
        pass

    def _residual(self, f):
        return f[:, :3] @ self.A.T

    def _activation(self, r):
        return barrier_activation(r, self.lower, self.upper)

    def _matrix(self, dim):
        return self.A


class WrenchCone(_ForceTerm):
    """w a(A f) of the 6D contact on ``frame`` with the quadratic barrier on Crocoddyl's
    wrench cone (ResidualModelContactWrenchCone with WrenchCone(rotation, mu, box, nf,
    inner_appr, ...)): box (length, width) of the foot."""

    def __init__(self, frame, mu=0.7, box=(0.1, 0.05), rotation=None, nf=4,
                 inner_appr=True, weight=1.0, min_nforce=0.0, max_nforce=np.inf):
        self.frame = frame
        self.A, self.lower, self.upper = wrench_cone_matrix(
            mu, box, rotation, nf, inner_appr, min_nforce, max_nforce)
        self.weight = _weight(weight)

    def group_key(self):
        return (type(self), self.weight, _hashable(self.A), _hashable(self.lower),
                _hashable(self.upper))

    def dim_ok(self, dim):
        if dim != 6:
            raise ValueError(f"WrenchCone on {self.frame!r}: its contact is {dim}D, a "
                             "wrench cone needs a 6D contact")

    def _residual(self, f):
        return f @ self.A.T

    def _activation(self, r):
        return barrier_activation(r, self.lower, self.upper)

    def _matrix(self, dim):
        return self.A
