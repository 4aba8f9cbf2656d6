"""The public functions of rbdiff.torch: check the tensors, apply the rule."""

from . import _rules as R
from ._checks import check
from ._function import build, call

_RNEA, _ABA, _CRBA, _MINV = build(R.RNEA), build(R.ABA), build(R.CRBA), build(R.MINVERSE)
_NLE, _GRAVITY, _FRAME = build(R.NLE), build(R.GRAVITY), build(R.FRAME_PLACEMENT)


def rnea(model, q, v, a):
    """Inverse dynamics tau = M(q) a + C(q, v) v + g(q) (rbd.rnea). q (..., nq), v, a
    (..., nv) -> (..., nv). Derivatives: rnea_derivatives; second:
    rnea_second_order_derivatives."""
    check(model, [("q", q, "nq"), ("v", v, "nv"), ("a", a, "nv")])
    return call(_RNEA, R.RNEA, model, None, q, v, a)[0]


def aba(model, q, v, tau):
    """Forward dynamics qdd = M(q)^-1 (tau - C(q, v) v - g(q)) (rbd.aba). q (..., nq), v,
    tau (..., nv) -> (..., nv). Derivatives: aba_derivatives; second:
    aba_second_order_derivatives."""
    check(model, [("q", q, "nq"), ("v", v, "nv"), ("tau", tau, "nv")])
    return call(_ABA, R.ABA, model, None, q, v, tau)[0]


def crba(model, q):
    """Joint-space inertia matrix M(q) (rbd.crba): q (..., nq) -> (..., nv, nv).
    Derivative: dM_dq of rnea_second_order_derivatives; no second derivative."""
    check(model, [("q", q, "nq")])
    return call(_CRBA, R.CRBA, model, None, q)[0]


def minverse(model, q):
    """M(q)^-1 (rbd.minverse): q (..., nq) -> (..., nv, nv). Derivative: d2qdd_dtaudq of
    aba_second_order_derivatives (= -Minv dM/dq Minv); no second derivative."""
    check(model, [("q", q, "nq")])
    return call(_MINV, R.MINVERSE, model, None, q)[0]


def nonlinear_effects(model, q, v):
    """C(q, v) v + g(q) = rnea(q, v, 0) (rbd.nonlinear_effects): q (..., nq), v (..., nv)
    -> (..., nv). Derivatives from rnea's kernels at a = 0."""
    check(model, [("q", q, "nq"), ("v", v, "nv")])
    return call(_NLE, R.NLE, model, None, q, v)[0]


def gravity(model, q):
    """Generalised gravity g(q) = rnea(q, 0, 0) (rbd.gravity): q (..., nq) -> (..., nv).
    Derivatives from rnea's kernels at v = a = 0."""
    check(model, [("q", q, "nq")])
    return call(_GRAVITY, R.GRAVITY, model, None, q)[0]


def frame_placement(model, q, frame):
    """Placement oMf (..., 4, 4) in the world of ``frame`` (a name or an index into
    model.frames) (rbd.frame_placement). First order only: d oMf / dq_k = oMf
    hat(J_local[:, k]) from rbd.frame_jacobian(reference="local"); asking for a second
    derivative raises."""
    check(model, [("q", q, "nq")])
    if not isinstance(frame, (str, int)):
        raise TypeError(f"frame: expected a frame name or index, got {type(frame).__name__}")
    return call(_FRAME, R.FRAME_PLACEMENT, model, frame, q)[0]
