"""Cost terms of a trajectory-optimisation problem, Crocoddyl's conventions: a term is
0.5 w ||r||^2 of a residual r, with the Gauss-Newton Hessian w J^T J of its residual
Jacobian J (Crocoddyl's ActivationModelQuad; exact for the linear residuals below, the
frame translation's curvature left out as in Crocoddyl); with per-coordinate
``weights`` a, 0.5 w sum_i a_i r_i^2 (ActivationModelWeightedQuad). More terms (centre
of mass, frame placement and velocity, contact forces, friction and wrench cones, state
bounds) in residuals.py.

Every term is evaluated on a whole trajectory at once: ``value(model, q, v, u)`` with
q (K, nq), v (K, nv), u (K, nu) or None (terminal knots) returns the costs (K,);
``derivatives(...)`` returns (cost (K,), l_x (K, 2nv), l_u (K, nu) or None,
l_xx (K, 2nv, 2nv), l_uu (K, nu, nu) or None); x is the tangent (dq, dv); the frame
functions run batched.
"""

from __future__ import annotations

import numpy as np

import rbdiff as _rbd
from ..kinematics import _frame_id as _frame_index
from ..model.layout import FREE_FLYER, SPHERICAL


def _lie(model):
    """Whether a joint's configuration space is not a vector space (its tangent maps
    are not the identity): spherical joints and free flyers."""
    return any(int(model.joint_types[i]) in (SPHERICAL, FREE_FLYER)
               for i in range(1, model.njoints))


def _weight(w):
    w = float(w)
    if not (np.isfinite(w) and w >= 0):
        raise ValueError(f"weight: expected a finite number >= 0, got {w}")
    return w


def _weights(name, a, n):
    """Per-coordinate activation weights (n,) >= 0 or None (all ones)."""
    if a is None:
        return None
    a = np.asarray(a, dtype=float)
    if a.shape != (n,) or not (np.isfinite(a).all() and (a >= 0).all()):
        raise ValueError(f"{name}: expected {n} finite weights >= 0, got shape {a.shape}")
    return a


def _finite(name, x, shape):
    x = np.asarray(x, dtype=float)
    if x.shape != shape or not np.isfinite(x).all():
        raise ValueError(f"{name}: expected finite values of shape {shape}, got "
                         f"{x.shape}")
    return x


def _hashable(a):
    return None if a is None else tuple(np.ravel(a).tolist())


def _copy(term):
    out = object.__new__(type(term))
    out.__dict__.update(term.__dict__)
    return out


class FrameTranslation:
    """0.5 w ||p_frame(q) - target||^2: the frame's origin in the world (Crocoddyl's
    ResidualModelFrameTranslation; its Jacobian is the LOCAL_WORLD_ALIGNED linear rows)."""

    def __init__(self, frame, target, weight=1.0):
        self.frame = frame
        self.target = _finite("target", target, (3,))
        self.weight = _weight(weight)

    def check(self, model, nu=None):
        model.frames[_frame_index(model, self.frame)]      # KeyError naming the frame

    def key(self):
        return (type(self), self.frame, self.weight)

    def stacked(self, terms):
        out = _copy(self)
        out.target = np.stack([t.target for t in terms])
        return out

    def value(self, model, q, v, u):
        r = _rbd.frame_placement(model, q, self.frame)[:, :3, 3] - self.target
        return 0.5 * self.weight * np.einsum("ki,ki->k", r, r)

    def derivatives(self, model, q, v, u):
        K, nv = q.shape[0], model.nv
        p = _rbd.frame_placement(model, q, self.frame)[:, :3, 3]
        J = _rbd.frame_jacobian(model, q, self.frame, "local_world_aligned")[:, :3, :]
        r = p - self.target
        w = self.weight
        lx = np.zeros((K, 2 * nv))
        lx[:, :nv] = w * np.einsum("kij,ki->kj", J, r)
        lxx = np.zeros((K, 2 * nv, 2 * nv))
        lxx[:, :nv, :nv] = w * np.einsum("kij,kil->kjl", J, J)
        return 0.5 * w * np.einsum("ki,ki->k", r, r), lx, None, lxx, None


class StateRegularization:
    """0.5 w ||x (-) x_ref||^2 with x (-) x_ref = (difference(q_ref, q), v - v_ref)
    (Crocoddyl's ResidualModelState); x_ref (nq + nv,); ``weights`` (2 nv,) optional
    per-coordinate weights a: 0.5 w sum_i a_i r_i^2 (ActivationModelWeightedQuad). Its
    Jacobian is blockdiag(d difference / d q, I) (difference_jacobians; Crocoddyl's
    Jdiff), the identity for vector-space joints (then not computed)."""

    def __init__(self, x_ref, weight=1.0, weights=None):
        self.x_ref = np.asarray(x_ref, dtype=float)
        self.weight = _weight(weight)
        self.weights = weights

    def check(self, model, nu=None):
        self.x_ref = _finite("StateRegularization x_ref", self.x_ref,
                             (model.nq + model.nv,))
        self.weights = _weights("StateRegularization weights", self.weights, 2 * model.nv)

    def key(self):
        """What knots sharing this term share (all but x_ref: stacked per knot)."""
        return (type(self), self.weight, _hashable(self.weights))

    def stacked(self, terms):
        """One term for the knots of ``terms`` (same key): x_ref (K, nq + nv)."""
        out = _copy(self)
        out.x_ref = np.stack([t.x_ref for t in terms])
        return out

    def residual(self, model, q, v):
        K, nq, nv = q.shape[0], model.nq, model.nv
        r = np.empty((K, 2 * nv))
        qref = np.ascontiguousarray(np.broadcast_to(self.x_ref[..., :nq], (K, nq)))
        r[:, :nv] = _rbd.difference(model, qref, np.ascontiguousarray(q))
        r[:, nv:] = v - self.x_ref[..., nq:]
        return r

    def value(self, model, q, v, u):
        r = self.residual(model, q, v)
        a = r if self.weights is None else r * self.weights
        return 0.5 * self.weight * np.einsum("ki,ki->k", a, r)

    def derivatives(self, model, q, v, u):
        K, nq, nv = q.shape[0], model.nq, model.nv
        r = self.residual(model, q, v)
        w = self.weight
        a = np.ones(2 * nv) if self.weights is None else self.weights
        lxx = np.broadcast_to(w * np.diag(a), (K, 2 * nv, 2 * nv)).copy()
        lx = w * a * r
        if _lie(model):
            Rq = _rbd.difference_jacobians(
                model, np.ascontiguousarray(np.broadcast_to(self.x_ref[..., :nq], (K, nq))),
                np.ascontiguousarray(q)).dq1
            aq = a[:nv]
            lx[:, :nv] = w * np.einsum("kji,kj->ki", Rq, aq * r[:, :nv])
            lxx[:, :nv, :nv] = w * np.einsum("kji,kjl->kil", Rq * aq[:, None], Rq)
        return 0.5 * w * np.einsum("ki,ki->k", a * r, r), lx, None, lxx, None


class ControlRegularization:
    """0.5 w ||u - u_ref||^2 (Crocoddyl's ResidualModelControl; u_ref defaults to 0);
    u the problem's controls (nu: the actuated joints' torques); ``weights`` (nu,)
    optional per-coordinate weights (ActivationModelWeightedQuad)."""

    reads_control = True

    def __init__(self, weight=1.0, u_ref=None, weights=None):
        self.weight = _weight(weight)
        self.u_ref = None if u_ref is None else np.asarray(u_ref, dtype=float)
        self.weights = weights

    def check(self, model, nu=None):
        n = model.nv if nu is None else nu
        if self.u_ref is not None:
            self.u_ref = _finite("ControlRegularization u_ref", self.u_ref, (n,))
        self.weights = _weights("ControlRegularization weights", self.weights, n)

    def key(self):
        return (type(self), self.weight, _hashable(self.weights), self.u_ref is None)

    def stacked(self, terms):
        out = _copy(self)
        if self.u_ref is not None:
            out.u_ref = np.stack([t.u_ref for t in terms])
        return out

    def value(self, model, q, v, u):
        r = u if self.u_ref is None else u - self.u_ref
        a = r if self.weights is None else r * self.weights
        return 0.5 * self.weight * np.einsum("ki,ki->k", a, r)

    def derivatives(self, model, q, v, u):
        r = u if self.u_ref is None else u - self.u_ref
        K, nu = u.shape
        w = self.weight
        a = np.ones(nu) if self.weights is None else self.weights
        luu = np.broadcast_to(w * np.diag(a), (K, nu, nu)).copy()
        return 0.5 * w * np.einsum("ki,ki->k", a * r, r), np.zeros((K, 2 * model.nv)), \
            w * a * r, np.zeros((K, 2 * model.nv, 2 * model.nv)), luu
