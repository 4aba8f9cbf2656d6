"""Per-knot constraints of a trajectory-optimisation problem (Problem(...,
constraints=...)): each one is a box on a residual,

    lower <= r(x, u, f) <= upper        (row by row; an equality where lower == upper),

with r's Jacobians in the tangent space, the conventions of the cost terms (costs.py,
residuals.py): x = (dq, dv) (2 nv), q moved by rbd.integrate, u the problem's controls
(nu), f the knot's forces of the contact on the constraint's frame (K, dim) in the
contact's reference, whose derivatives df_dx (K, dim, 2nv), df_du (K, dim, nu) the
knot's contact dynamics give (Problem._dynamics_parts), so that

    R_x = dr/dx + dr/df df_dx,   R_u = dr/du + dr/df df_du.

Every constraint is evaluated on the knots of a group at once (K knots): ``residual(model,
q, v, u, f)`` (K, m) and ``jacobians(model, q, v, u, f, df_dx, df_du)`` = (r (K, m),
R_x (K, m, 2nv) or (K, m, 0) when r does not depend on x, R_u (K, m, nu) or (K, m, 0)),
``violation(r)`` (K, m): how far each row is outside its bounds (0 inside). The rows
whose bounds are both infinite are left out (a free flyer's in a state box).

Constraints: ControlBox (torque limits, default the model's effort limits), StateBox
(joint position and velocity limits, default the model's), StateEquality (a state,
e.g. at the terminal knot), FramePlacementEquality (a frame's placement),
FrameTranslationBox (a frame's origin in a box: swing-foot
clearance), FrictionCone (Crocoddyl's linearised cone, nf facets, inner or outer, with
the normal force in [min_nforce, max_nforce]), CircularCone (the exact second-order
cone ||f_t|| <= mu f_n), MinNormalForce, WrenchCone (a 6D
contact's: the friction cone, the centre of pressure in the sole, the yaw torque). The
cones' matrices are the cost terms' (residuals.friction_cone_matrix,
wrench_cone_matrix): one statement of their math.

ConstraintSet groups a problem's constraints as Problem groups its cost terms: knots
sharing a constraint's key (kind, frame, bounds: all but its targets) evaluated by one
batched call, the force constraints reading each knot's rows of its contact.
"""

from __future__ import annotations

import numpy as np

from ..kinematics import _frame_id as _frame_index
from . import calls
from .costs import _finite, _hashable, _stacked
from .residuals import (FramePlacement, FrictionCone as _ConeTerm, StateBounds,
                        WrenchCone as _WrenchTerm, _bounds, _placement, barrier_activation,
                        friction_cone_matrix)
from .rollout import IMPULSE

_NONE = np.zeros((1, 1, 0))        # R_x or R_u of a residual without those columns


def _box(name, lower, upper, n):
    """(lower, upper) (n,) each of scalars or (n,) arrays, None: unbounded; checked."""
    lo = np.full(n, -np.inf) if lower is None else np.broadcast_to(
        np.asarray(lower, dtype=float), (n,)).copy()
    hi = np.full(n, np.inf) if upper is None else np.broadcast_to(
        np.asarray(upper, dtype=float), (n,)).copy()
    return _bounds(name, lo, hi, n)


class Constraint:
    """What every constraint shares: its bounds (lower, upper (m,)), its ``name`` (the
    reports' label: the kind and frame unless given), ``violation``."""

    reads_forces = False
    reads_control = False
    frame = None
    label = None

    @property
    def name(self):
        if self.label is not None:
            return self.label
        kind = type(self).__name__
        return kind if self.frame is None else f"{kind}({self.frame})"

    @property
    def equality(self):
        """(m,) bool: the rows that are equalities."""
        return self.lower == self.upper

    @property
    def size(self):
        """m: the residual's rows."""
        return len(self.lower)

    def violation(self, r):
        """(K, m): max(lower - r, r - upper, 0) row by row."""
        return np.maximum(np.maximum(self.lower - r, r - self.upper), 0.0)

    def activation(self, s):
        """(s - proj(s) (K, m), the derivative of s - proj(s): its diagonal (K, m)) of the
        projection onto the box (the augmented Lagrangian's, constrained.py): Crocoddyl's
        quadratic barrier's a', a'' (residuals.barrier_activation)."""
        return barrier_activation(s, self.lower, self.upper)[1:]

    def complementarity(self, r, mu):
        """(K,): the worst over the inequality rows of min(|mu_i|, |r_i - b_i|), b_i the
        bound on mu_i's side (upper for mu > 0, lower for mu < 0)."""
        ineq = ~self.equality
        b = np.where(mu > 0, self.upper, self.lower)
        gap = np.where(mu != 0, np.abs(r - np.where(np.isfinite(b), b, 0.0)), 0.0)
        return np.minimum(np.abs(mu), gap)[:, ineq].max(axis=1, initial=0.0)

    def key(self):
        return (type(self), self.frame, _hashable(self.lower), _hashable(self.upper))

    def stacked(self, terms):
        return self

    def dim_ok(self, dim):
        pass


class ControlBox(Constraint):
    """lower <= u <= upper (nu each, scalars broadcast): torque limits. Both None: the
    model's effort limits of the actuated joints (model.effort_limits[nv - nu:]),
    +-limit; an error if the model states none."""

    reads_control = True

    def __init__(self, lower=None, upper=None, name=None):
        self._given = (lower, upper)
        self.label = name

    def check(self, model, nu=None):
        nu = model.nv if nu is None else nu
        lower, upper = self._given
        if lower is None and upper is None:
            lim = np.asarray(model.effort_limits, dtype=float)[model.nv - nu:]
            if not np.isfinite(lim).any():
                raise ValueError("ControlBox: the model states no effort limits (all "
                                 "+inf): give lower and upper")
            lower, upper = -lim, lim
        lo, hi = _box("ControlBox", lower, upper, nu)
        self.rows = np.flatnonzero(np.isfinite(lo) | np.isfinite(hi))
        self.lower, self.upper = lo[self.rows], hi[self.rows]
        self._R = np.ascontiguousarray(np.eye(nu)[self.rows])

    def residual(self, model, q, v, u, f=None):
        return u[:, self.rows]

    def jacobians(self, model, q, v, u, f=None, df_dx=None, df_du=None):
        return (self.residual(model, q, v, u), _NONE,
                np.broadcast_to(self._R, (u.shape[0],) + self._R.shape))


class StateBox(Constraint):
    """lower <= x (-) x_ref <= upper (2 nv each, tangent coordinates: the joint
    positions' then the velocities' rows); x_ref defaults to (neutral, 0). Both bounds
    None: the model's joint position limits and velocity limits (StateBounds.limits with
    model.velocity_limits: the cost term's bounds, one-dof joints only)."""

    def __init__(self, lower=None, upper=None, x_ref=None, name=None):
        self._given = (lower, upper)
        self.x_ref = None if x_ref is None else np.asarray(x_ref, dtype=float)
        self.label = name

    def check(self, model, nu=None):
        n = 2 * model.nv
        lower, upper = self._given
        if lower is None and upper is None:
            lower, upper = StateBounds.limits(model, model.velocity_limits)
        lo, hi = _box(type(self).__name__, lower, upper, n)
        self.rows = np.flatnonzero(np.isfinite(lo) | np.isfinite(hi))
        if not len(self.rows):
            raise ValueError(f"{type(self).__name__}: every bound is infinite (the model "
                             "states no limits): give lower and upper")
        self.lower, self.upper = lo[self.rows], hi[self.rows]
        if self.x_ref is None:
            from .. import neutral
            self.x_ref = np.concatenate([neutral(model), np.zeros(model.nv)])
        if self.x_ref.ndim == 1:
            self.x_ref = _finite(f"{type(self).__name__} x_ref", self.x_ref,
                                 (model.nq + model.nv,))

    def _qref(self, model, K):
        return np.ascontiguousarray(np.broadcast_to(self.x_ref[..., :model.nq],
                                                    (K, model.nq)))

    def residual(self, model, q, v, u=None, f=None):
        K, nv = q.shape[0], model.nv
        r = np.empty((K, 2 * nv))
        r[:, :nv] = calls.difference(model, self._qref(model, K), np.ascontiguousarray(q))
        r[:, nv:] = v - self.x_ref[..., model.nq:]
        return r[:, self.rows]

    def jacobians(self, model, q, v, u=None, f=None, df_dx=None, df_du=None):
        K, nv = q.shape[0], model.nv
        R = np.zeros((K, 2 * nv, 2 * nv))
        # d (q (-) q_ref) / dq in the tangent: difference's Jacobian in its second argument
        R[:, :nv, :nv] = calls.difference_jacobians(model, self._qref(model, K),
                                                    np.ascontiguousarray(q)).dq1
        R[:, nv:, nv:] = np.eye(nv)
        return self.residual(model, q, v), R[:, self.rows], _NONE


class StateEquality(StateBox):
    """x (-) x_ref = 0 (2 nv rows): reach the state x_ref (nq + nv,) (a terminal
    equality); targets stacked per knot as the cost terms'."""

    def __init__(self, x_ref, name=None):
        super().__init__(0.0, 0.0, x_ref, name)

    def key(self):
        return (type(self), _hashable(self.lower), _hashable(self.upper))

    def stacked(self, terms):
        return _stacked(self, terms, "x_ref")


class FrameTranslationBox(Constraint):
    """lower <= p_frame(q) <= upper (3 each, world axes; +-inf or None: that axis
    unbounded): e.g. a swing foot's clearance p_z >= h. R_q = the frame's
    LOCAL_WORLD_ALIGNED linear Jacobian rows (the cost FrameTranslation's)."""

    def __init__(self, frame, lower=None, upper=None, name=None):
        self.frame = frame
        lo, hi = _box("FrameTranslationBox", lower, upper, 3)
        self.rows = np.flatnonzero(np.isfinite(lo) | np.isfinite(hi))
        if not len(self.rows):
            raise ValueError("FrameTranslationBox: every bound is infinite")
        self.lower, self.upper = lo[self.rows], hi[self.rows]
        self.label = name

    def check(self, model, nu=None):
        model.frames[_frame_index(model, self.frame)]      # KeyError naming the frame

    def residual(self, model, q, v=None, u=None, f=None):
        fid = _frame_index(model, self.frame)
        return calls.frame_placement(model, np.ascontiguousarray(q), fid)[:, self.rows, 3]

    def jacobians(self, model, q, v=None, u=None, f=None, df_dx=None, df_du=None):
        fid = _frame_index(model, self.frame)
        J = calls.frame_jacobian(model, np.ascontiguousarray(q), fid, "local_world_aligned")
        R = np.zeros((q.shape[0], len(self.rows), 2 * model.nv))
        R[:, :, :model.nv] = J[:, self.rows]
        return self.residual(model, q), R, _NONE


class FramePlacementEquality(Constraint):
    """log6(M_ref^-1 M_frame(q)) = 0 (6 rows, [linear, angular] in the frame's axes): the
    frame at placement M_ref (4, 4) (a terminal foot or hand placement); its residual and
    Jacobian Jlog6(M_ref^-1 M) J_local are the cost FramePlacement's (residuals.py);
    placements stacked per knot as the cost terms' targets."""

    def __init__(self, frame, placement, name=None):
        self.frame = frame
        self.placement = _placement("FramePlacementEquality placement", placement)
        self.lower = self.upper = np.zeros(6)
        self.label = name

    def check(self, model, nu=None):
        model.frames[_frame_index(model, self.frame)]      # KeyError naming the frame

    def stacked(self, terms):
        return _stacked(self, terms, "placement")

    def residual(self, model, q, v=None, u=None, f=None):
        return FramePlacement._log(self, model, np.ascontiguousarray(q))[0]

    def jacobians(self, model, q, v=None, u=None, f=None, df_dx=None, df_du=None):
        q = np.ascontiguousarray(q)
        r, Jl = FramePlacement._log(self, model, q)
        J = calls.frame_jacobian(model, q, _frame_index(model, self.frame), "local")
        R = np.zeros((q.shape[0], 6, 2 * model.nv))
        R[:, :, :model.nv] = Jl @ J
        return r, R, _NONE


class _ForceConstraint(Constraint):
    """lower <= A f <= upper of the contact on ``frame`` (its knots must have one): A's
    columns the force's first A.shape[1] entries (the linear force of a 6D contact for
    a friction cone)."""

    reads_forces = True
    reads_control = True

    def check(self, model, nu=None):
        model.frames[_frame_index(model, self.frame)]

    def residual(self, model, q, v, u, f):
        return f[:, :self.A.shape[1]] @ self.A.T

    def jacobians(self, model, q, v, u, f, df_dx, df_du):
        d = self.A.shape[1]
        # matmul: an einsum over the knots loops without BLAS
        return (self.residual(model, q, v, u, f), self.A @ df_dx[:, :d],
                self.A @ df_du[:, :d])


class FrictionCone(_ForceConstraint):
    """Crocoddyl's linearised friction cone as a constraint: A f <= 0 on nf facets and
    min_nforce <= n.f <= max_nforce (A, bounds: residuals.friction_cone_matrix, the cost
    term's), the contact's linear force; ``inner_appr``: the facets inside the circular
    cone |f_t| <= mu f_n (then |f_t| <= mu f_n holds), else through it (Crocoddyl's
    gaits: the outer one)."""

    def __init__(self, frame, mu=0.7, rotation=None, nf=4, inner_appr=False,
                 min_nforce=0.0, max_nforce=np.inf, name=None):
        self.frame = frame
        term = _ConeTerm(frame, mu, rotation, nf, inner_appr, 1.0, min_nforce, max_nforce)
        self.A, self.lower, self.upper = term.A, term.lower, term.upper
        self.mu, self.label = float(mu), name


class CircularCone(_ForceConstraint):
    """The exact (second-order) friction cone ||f_t|| <= mu f_n of the contact's linear
    force f: its residual r = R' f (K, 3) = (t1.f, t2.f, n.f) in the cone's axes
    (rotation R's columns t1, t2, n: world axes by default), the set K = {(t, n): ||t||
    <= mu n} (f_n >= 0 with it). Not a box: the augmented Lagrangian projects onto K
    (``activation``: s - proj_K(s) and its exact derivative I - d proj_K / ds, the
    Hessian of 0.5 dist(s, K)^2, K being convex), as Aligator's second-order cones;
    ``violation`` dist(r, K) (K, 1)."""

    def __init__(self, frame, mu=0.7, rotation=None, name=None):
        self.frame = frame
        self.R = np.eye(3) if rotation is None else _finite("rotation", rotation, (3, 3))
        friction_cone_matrix(mu, self.R, 2)           # mu's check, the linear cone's
        self.mu, self.label = float(mu), name
        self.A = np.ascontiguousarray(self.R.T)        # r = A f (_ForceConstraint's)

    @property
    def size(self):
        return 3

    def key(self):
        return (type(self), self.frame, self.mu, _hashable(self.R))

    def project(self, s):
        """(proj_K(s) (K, 3), its Jacobian (K, 3, 3)): s inside K: s, I; in the polar
        cone (mu ||t|| <= -n): 0, 0; else onto the boundary, beta (mu e, 1) with
        e = t / ||t||, beta = (mu ||t|| + n) / (1 + mu^2)."""
        mu, K = self.mu, s.shape[0]
        a = np.hypot(s[:, 0], s[:, 1])
        inside = a <= mu * s[:, 2]
        polar = mu * a <= -s[:, 2]
        side = ~(inside | polar)
        P, J = s.copy(), np.zeros((K, 3, 3))
        J[inside] = np.eye(3)
        P[polar] = 0.0
        if side.any():
            e = s[side, :2] / a[side, None]
            beta = (mu * a[side] + s[side, 2]) / (1.0 + mu * mu)
            P[side, :2] = (beta * mu)[:, None] * e
            P[side, 2] = beta
            ee = e[:, :, None] * e[:, None, :]
            c = 1.0 / (1.0 + mu * mu)
            J[side, :2, :2] = mu * mu * c * ee + (beta * mu / a[side])[:, None, None] * (
                np.eye(2) - ee)
            J[side, :2, 2] = mu * c * e
            J[side, 2, :2] = mu * c * e
            J[side, 2, 2] = c
        return P, J

    def violation(self, r):
        return np.linalg.norm(r - self.project(r)[0], axis=1)[:, None]

    def activation(self, s):
        P, J = self.project(s)
        return s - P, np.eye(3) - J

    def complementarity(self, r, mu):
        """(K,): min(||mu||, |mu.r| / ||mu||): mu in the polar cone is normal to K at r."""
        n = np.linalg.norm(mu, axis=1)
        return np.where(n > 0, np.minimum(n, np.abs(np.einsum("ki,ki->k", mu, r))
                                          / np.where(n > 0, n, 1.0)), 0.0)


class MinNormalForce(_ForceConstraint):
    """n.f >= min_nforce (n the contact's normal, rotation's third column: world z by
    default): the foot pushes on the ground. The row of friction_cone_matrix."""

    def __init__(self, frame, min_nforce=0.0, rotation=None, name=None):
        self.frame = frame
        A, lo, hi = friction_cone_matrix(0.0, rotation, 2, False, min_nforce)
        self.A, self.lower, self.upper = A[2:], lo[2:], hi[2:]
        self.label = name


class WrenchCone(_ForceConstraint):
    """Crocoddyl's wrench cone of a rectangular sole as a constraint (a 6D contact):
    the friction cone, the centre of pressure inside box (length, width), the yaw torque
    (residuals.wrench_cone_matrix, the cost term's)."""

    def __init__(self, frame, mu=0.7, box=(0.1, 0.05), rotation=None, nf=4,
                 inner_appr=True, min_nforce=0.0, max_nforce=np.inf, name=None):
        self.frame = frame
        term = _WrenchTerm(frame, mu, box, rotation, nf, inner_appr, 1.0, min_nforce,
                           max_nforce)
        self.A, self.lower, self.upper = term.A, term.lower, term.upper
        self._term = term
        self.label = name

    def dim_ok(self, dim):
        self._term.dim_ok(dim)


class ConstraintSet:
    """A problem's constraints, checked and grouped: ``groups`` a list of (K (slice or
    index array into the T+1 knots), knots (K,) int, term (stacked), off (K, dim) or
    None: the rows of each knot's forces the term reads). ``per_knot``: a list of T
    lists (knot t's constraints), or one list for every knot that is not an impulse
    knot; ``terminal``: knot T's (state constraints only)."""

    def __init__(self, prob, per_knot, terminal=()):
        T, model = prob.T, prob.model
        per_knot = list(per_knot or ())
        flat = not (len(per_knot) == T and all(isinstance(c, (list, tuple))
                                               for c in per_knot))
        knots = [[] if flat and k == IMPULSE else list(per_knot if flat else per_knot[t])
                 for t, k in enumerate(prob.kind)]
        terminal = list(terminal or ())
        seen = set()
        for c in (per_knot if flat else []) + [c for cs in knots for c in cs] + terminal:
            if not isinstance(c, Constraint):
                raise TypeError(f"constraints: expected rbdiff.trajopt.constraints "
                                f"constraints (or a list of {T} per-knot lists of them), "
                                f"got {type(c).__name__}")
            if id(c) not in seen:
                seen.add(id(c))
                c.check(model, prob.nu)
        for c in terminal:
            if c.reads_control:
                raise ValueError(f"terminal constraints: {c.name} reads the control or "
                                 "the contact forces, which the terminal knot does not "
                                 "have")
        groups = {}
        for t, cs in enumerate(knots + [terminal]):
            imp = t < T and prob.kind[t] == IMPULSE
            count = {}
            for c in cs:
                if imp and c.reads_control:
                    raise ValueError(f"knot {t}: {c.name} reads the control (or the "
                                     "contact forces), which an impulse knot does not "
                                     "have")
                key = c.key()
                n = count[key] = count.get(key, -1) + 1      # a key twice at one knot
                key = (t == T, key, n)
                if c.reads_forces:
                    key += (prob._force_slot(t, c)[1],)       # ValueError: no contact
                groups.setdefault(key, ([], []))
                groups[key][0].append(t)
                groups[key][1].append(c)
        self.groups = []
        for key, (ts, cs) in groups.items():
            K = np.array(ts, np.int64)
            off = None
            if cs[0].reads_forces:
                off = np.array([prob._force_slot(t, cs[0])[0] for t in ts])[:, None] \
                    + np.arange(key[-1])
            span = slice(int(K[0]), int(K[-1]) + 1) if K[-1] - K[0] == len(K) - 1 else K
            self.groups.append((span, K, cs[0].stacked(cs), off))
        self.reads_forces = any(g[3] is not None for g in self.groups)
        self.model, self.T = model, T
        self.knot_constraints, self.terminal = knots, terminal

    def __len__(self):
        return len(self.groups)

    def _args(self, K, knots, off, q, v, us, forces):
        u = None if knots[-1] == self.T else us[K]
        f = None
        if off is not None:
            if forces is None:
                raise ValueError("constraints: the force constraints need the knots' "
                                 "contact forces")
            f = forces[knots[:, None], off]
        return q[K], v[K], u, f

    def residuals(self, q, v, us, forces=None):
        """[r (K, m) per group] at the trajectory q (T+1, nq), v (T+1, nv), us (T, nu),
        forces (T, ncmax) (the knots' contact forces: shoot or a rollout's)."""
        out = []
        for K, knots, c, off in self.groups:
            out.append(c.residual(self.model, *self._args(K, knots, off, q, v, us, forces)))
        return out

    def jacobians(self, q, v, us, forces=None, dforces=None):
        """[(r, R_x, R_u) per group] (Constraint.jacobians); ``dforces`` = (df_dx (T,
        ncmax, 2nv), df_du (T, ncmax, nu)) (Problem._dynamics_parts') where a constraint
        reads the forces."""
        out = []
        for K, knots, c, off in self.groups:
            qk, vk, uk, fk = self._args(K, knots, off, q, v, us, forces)
            if off is None:
                out.append(c.jacobians(self.model, qk, vk, uk))
                continue
            if dforces is None:
                raise ValueError("constraints: the force constraints' Jacobians need the "
                                 "contact forces' derivatives")
            r = knots[:, None]
            out.append(c.jacobians(self.model, qk, vk, uk, fk, dforces[0][r, off],
                                   dforces[1][r, off]))
        return out

    def violations(self, rs):
        """[violation (K, m) per group] of residuals rs (``residuals``)."""
        return [g[2].violation(r) for g, r in zip(self.groups, rs)]

    def report(self, rs):
        """(max_violation, {name: worst violation}, (name, knot, row) of the worst) of
        residuals rs: the constraints named (Constraint.name), their groups merged."""
        per, worst, where = {}, 0.0, None
        for (K, knots, c, _), r in zip(self.groups, rs):
            viol = c.violation(r)
            if not viol.size:
                continue
            k, i = np.unravel_index(int(np.argmax(viol)), viol.shape)
            w = float(viol[k, i])
            per[c.name] = max(per.get(c.name, 0.0), w)
            if where is None or w > worst:
                worst, where = w, (c.name, int(knots[k]), int(i))
        return worst, per, where
