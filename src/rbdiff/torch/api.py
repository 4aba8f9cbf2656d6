"""The public functions of rbdiff.torch: check the tensors, apply the rule."""

from ..contacts import _as_tuple, _restitution, pack
from ..results import ContactDynamics, ImpulseDynamics
from . import _rules as R
from ._checks import check
from ._function import build, call, call_one, call_single

_RNEA, _ABA, _CRBA, _MINV = build(R.RNEA), build(R.ABA), build(R.CRBA), build(R.MINVERSE)
_NLE, _GRAVITY, _FRAME = build(R.NLE), build(R.GRAVITY), build(R.FRAME_PLACEMENT)


def rnea(model, q, v, a):
    """Inverse dynamics tau = M(q) a + C(q, v) v + g(q) (rbd.rnea). q (..., nq), v, a
    (..., nv) -> (..., nv). Derivatives: rnea_derivatives; second:
    rnea_second_order_derivatives."""
    y = call_one(_RNEA, R.RNEA, model, q, v, a)
    if y is not None:
        return y
    check(model, [("q", q, "nq"), ("v", v, "nv"), ("a", a, "nv")])
    return call(_RNEA, R.RNEA, model, None, q, v, a)[0]


def aba(model, q, v, tau):
    """Forward dynamics qdd = M(q)^-1 (tau - C(q, v) v - g(q)) (rbd.aba). q (..., nq), v,
    tau (..., nv) -> (..., nv). Derivatives: aba_derivatives; second:
    aba_second_order_derivatives."""
    y = call_one(_ABA, R.ABA, model, q, v, tau)
    if y is not None:
        return y
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


# ---- contact kinematics (issue 24): first derivatives from rbdiff.motion_partials
_FVEL, _FACC = build(R.FRAME_VELOCITY), build(R.FRAME_ACCELERATION)
_COM, _H = build(R.CENTER_OF_MASS), build(R.CENTROIDAL_MOMENTUM)
_PE, _KE = build(R.POTENTIAL_ENERGY), build(R.KINETIC_ENERGY)


def _frame(frame):
    if not isinstance(frame, (str, int)):
        raise TypeError(f"frame: expected a frame name or index, got {type(frame).__name__}")
    return frame


def frame_velocity(model, q, v, frame, reference="local"):
    """Spatial velocity (..., 6) [linear, angular] of ``frame`` (a name or an index) in
    ``reference`` ("local", "world", "local_world_aligned") (rbd.frame_velocity): q (...,
    nq), v (..., nv). First order only, from rbd.frame_velocity_derivatives (in
    "local_world_aligned" plus [w x dp/dq; 0]: the derivative of the returned value, the
    frame origin moving); a second derivative raises."""
    check(model, [("q", q, "nq"), ("v", v, "nv")])
    return call(_FVEL, R.FRAME_VELOCITY, model, (_frame(frame), reference), q, v)[0]


def frame_acceleration(model, q, v, a, frame, reference="local", classical=False):
    """Spatial (or, ``classical``, classical) acceleration (..., 6) of ``frame`` in
    ``reference`` (rbd.frame_acceleration): q (..., nq), v, a (..., nv). First order only,
    from rbd.frame_acceleration_derivatives (spatial "local_world_aligned": plus
    [dw/dt x dp/dq; 0], the derivative of the returned value); a second derivative
    raises."""
    check(model, [("q", q, "nq"), ("v", v, "nv"), ("a", a, "nv")])
    if not isinstance(classical, bool):
        raise TypeError(f"classical: expected True or False, got {classical!r}")
    return call(_FACC, R.FRAME_ACCELERATION, model, (_frame(frame), reference, classical),
                q, v, a)[0]


def center_of_mass(model, q):
    """Centre of mass (..., 3) in the world frame (rbd.center_of_mass(model, q)): q (...,
    nq). Derivative: rbd.com_jacobian; a second derivative raises."""
    check(model, [("q", q, "nq")])
    return call(_COM, R.CENTER_OF_MASS, model, (), q)[0]


def centroidal_momentum(model, q, v):
    """Centroidal momentum h = Ag(q) v (..., 6) [linear, angular] about the centre of mass,
    world axes (rbd.centroidal_momentum(model, q, v)): q (..., nq), v (..., nv).
    Derivatives: dh_dq of rbd.centroidal_dynamics_derivatives, dh_dv = Ag; a second
    derivative raises."""
    check(model, [("q", q, "nq"), ("v", v, "nv")])
    return call(_H, R.CENTROIDAL_MOMENTUM, model, (), q, v)[0]


def potential_energy(model, q):
    """Gravitational potential energy (...) (rbd.potential_energy): q (..., nq) -> a scalar
    per state. Gradient: gravity(q); Hessian: gravity's derivative (rnea's kernels)."""
    check(model, [("q", q, "nq")])
    return call(_PE, R.POTENTIAL_ENERGY, model, None, q)[0]


def kinetic_energy(model, q, v):
    """Kinetic energy 0.5 v^T M(q) v (...) (rbd.kinetic_energy): q (..., nq), v (..., nv)
    -> a scalar per state. Gradients: M v in v, 0.5 v^T dM/dq v in q (two
    rnea_derivatives calls, rbdiff.motion_partials); a second derivative raises."""
    check(model, [("q", q, "nq"), ("v", v, "nv")])
    return call(_KE, R.KINETIC_ENERGY, model, (), q, v)[0]


# ---- contact and impulse dynamics: first derivatives from rbd.contact_dynamics_derivatives
# and rbd.impulse_dynamics_derivatives. One float64 state takes call_single (no check(),
# the NumPy API's own checks of the values and the contact set)
_CD, _ID = build(R.CONTACT_DYNAMICS), build(R.IMPULSE_DYNAMICS)
_new = tuple.__new__


def _contacts(contacts):
    """The contact set as a tuple: itself if it is one (the NumPy API's caches key on its
    id, and its pack checks the items)."""
    return contacts if type(contacts) is tuple else _as_tuple(contacts)


def contact_dynamics(model, q, v, tau, contacts):
    """Accelerations and contact forces of the model held by ``contacts`` (an rbd.Contact
    or a sequence of them) (rbd.contact_dynamics, without damping or fext, as
    rbdiff.jax's): q (..., nq), v, tau (..., nv) -> ContactDynamics(qdd (..., nv), forces
    (..., nc)), the forces stacked in contact order in each contact's reference. First
    derivatives only, from rbd.contact_dynamics_derivatives (the six blocks, q mapped to
    its ambient coordinates as every function here); a second derivative raises.
    Dependent contacts raise rbd.DependentContacts (the NumPy API's checks)."""
    t = _contacts(contacts)
    y = call_single(_CD, R.CONTACT_DYNAMICS, model, t, q, v, tau)
    if y is None:
        check(model, [("q", q, "nq"), ("v", v, "nv"), ("tau", tau, "nv")])
        pack(model, t)              # an unknown frame or a bad set fails here, named
        y = call(_CD, R.CONTACT_DYNAMICS, model, t, q, v, tau)
    return _new(ContactDynamics, y)


def impulse_dynamics(model, q, v_before, contacts, restitution=0.0):
    """The velocity jump of an impact with ``contacts`` (an rbd.Contact or a sequence)
    (rbd.impulse_dynamics, without damping, as rbdiff.jax's): q (..., nq), v_before (...,
    nv) -> ImpulseDynamics(v_after (..., nv), impulses (..., nc)), the impulses stacked
    as contact_dynamics' forces; ``restitution`` a number in [0, 1] (not differentiated).
    First derivatives only, from rbd.impulse_dynamics_derivatives (q mapped to its
    ambient coordinates); a second derivative raises. Dependent contacts raise
    rbd.DependentContacts."""
    t = _contacts(contacts)
    e = (t, _restitution(restitution))
    y = call_single(_ID, R.IMPULSE_DYNAMICS, model, e, q, v_before)
    if y is None:
        check(model, [("q", q, "nq"), ("v_before", v_before, "nv")])
        pack(model, t)
        y = call(_ID, R.IMPULSE_DYNAMICS, model, e, q, v_before)
    return _new(ImpulseDynamics, y)
