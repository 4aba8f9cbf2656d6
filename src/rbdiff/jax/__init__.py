"""rbdiff for JAX: dynamics whose JAX derivatives are rbdiff's analytical kernels.

    import jax, rbdiff as rbd, rbdiff.jax as rj
    jax.config.update("jax_enable_x64", True)
    model = rbd.load_robot("iiwa14")
    qdd = rj.aba(model, q, v, tau)                                 # (nv,)
    dqdd = jax.jacrev(rj.aba, argnums=3)(model, q, v, tau)        # = M^-1, analytically
    H = jax.hessian(lambda q: rj.rnea(model, q, v, a)[0])(q)       # second-order kernels

Functions (model first, then arrays, as in the NumPy API; fext is not supported):
rnea(model, q, v, a), aba(model, q, v, tau), crba(model, q), minverse(model, q),
nonlinear_effects(model, q, v), gravity(model, q), integrate(model, q, v),
difference(model, q0, q1), frame_placement(model, q, frame), and the partials
rnea_derivatives(model, q, v, a), aba_derivatives(model, q, v, tau) (NumPy API's
NamedTuples; differentiable once more); the contact kinematics frame_velocity(model, q,
v, frame, reference), frame_acceleration(model, q, v, a, frame, reference, classical),
center_of_mass(model, q), centroidal_momentum(model, q, v), potential_energy(model, q),
kinetic_energy(model, q, v); contact_dynamics(model, q, v, tau, contacts) -> (qdd,
forces) and impulse_dynamics(model, q, v_before, contacts, restitution) -> (v_after,
impulses), first derivatives from rbd.contact_dynamics_derivatives and
rbd.impulse_dynamics_derivatives (the contact set's packed tables are operands of the
handlers: contacts.py).

- Traceable under jit, vmap (nested too), grad, jacfwd, jacrev, jvp, vjp and hessian.
  Each function is a ``jax.custom_jvp`` whose rule takes its partials from rbdiff's
  derivative kernels, which carry their own rules from the second-order kernels
  (rules.py): first and second derivatives of rnea, aba, nonlinear_effects and gravity
  are analytical; crba, minverse and frame_placement have first derivatives only. A
  derivative rbdiff has no kernel for raises NotImplementedError (never silent zeros).
  The contact kinematics have first derivatives only (potential_energy: two, its
  gradient being gravity), the true derivatives of the returned values
  (rbdiff.motion_partials; in "local_world_aligned" not Pinocchio's origin-fixed
  getters).
- q is read in its ambient layout (nq) through the retraction that normalises every
  quaternion and (cos, sin) pair, so derivatives in q are right for any q, on the
  manifold or off it, and jacfwd(lambda dq: f(integrate(model, q, dq)))(0) is rbdiff's
  tangent derivative. integrate and difference are jax.numpy (configuration.py),
  differentiated by JAX itself.
- Arrays may carry leading batch axes (broadcast against each other); vmap of any depth
  becomes one batched kernel call (calls.py), serial or on all Numba threads (omp or
  tbb threading layer) as decided per call at run time by rbdiff.cpu.policy's rule,
  the NumPy batches' (plans.py).
- dtype: float64 under ``jax_enable_x64``, float32 otherwise (the kernels then run in
  float64 and the results are cast to float32).
- Kernel calls: XLA FFI custom calls to Numba cfunc handlers (ffi.py; registered and
  batched in calls.py) that call rbdiff's batch entries by address (entries.py). A cold
  first use compiles a handler (about a second once its entries are compiled; cached on
  disk; ``python -m rbdiff compile`` or calls.compile_handlers() warms them all).
  A NaN input gives NaN outputs at run time (a C handler cannot raise; values are never
  seen under jit, as in JAX itself: jax_debug_nans finds them); shapes and dtypes are
  refused at trace time. The rules' Jacobian-vector products are custom calls too
  (contract.py): XLA dots would count flops, and PjRt's CPU client hands any
  computation of 1000 estimated flops or more to a worker thread (tens of us per call
  on a busy machine), which dominated small jitted gradients.
- CUDA arrays: not yet run on rbdiff.gpu; a function traced for a GPU device raises
  (no silent host copy).

Requires the extra ``rbdiff[jax]``.
"""

import operator

try:
    import jax
    import jax.numpy as jnp
except ImportError as err:          # pragma: no cover (the extra is installed in CI)
    raise ImportError("rbdiff.jax needs JAX: pip install 'rbdiff[jax]'") from err

from ..derivatives import ABADerivatives, RNEADerivatives
from ..results import REFERENCE_CODES, reference_name
from .rules import Rules

__all__ = ["rnea", "aba", "crba", "minverse", "nonlinear_effects", "gravity", "integrate",
           "difference", "frame_placement", "rnea_derivatives", "aba_derivatives",
           "rnea_second_order_derivatives", "aba_second_order_derivatives",
           "frame_velocity", "frame_acceleration", "center_of_mass", "centroidal_momentum",
           "potential_energy", "kinetic_energy", "contact_dynamics", "impulse_dynamics"]

_RULES = {}     # id(model) -> (model, Rules): the model is kept alive with its rules


def _rules(model):
    hit = _RULES.get(id(model))
    if hit is None or hit[0] is not model:
        if not all(hasattr(model, k) for k in ("nq", "nv", "njoints", "joint_types")):
            raise TypeError(f"model: expected an rbdiff Model, got {type(model).__name__}")
        hit = _RULES[id(model)] = (model, Rules(model))
    return hit[1]


def _device_check(x):
    """Refuse arrays committed to a GPU: rbdiff.gpu is not wired to JAX yet."""
    devices = getattr(x, "devices", None)
    if callable(devices) and not isinstance(x, jax.core.Tracer):
        try:
            platforms = {d.platform for d in devices()}
        except Exception:     # an array without placement: a host value
            return
        if platforms - {"cpu"}:
            raise NotImplementedError(
                "rbdiff.jax: arrays on a GPU are not supported yet (rbdiff.gpu is not "
                "wired to JAX); move them to the CPU (jax.device_put(x, jax.devices('cpu')[0]))")


def _backend_check():
    """Refuse tracing for a GPU backend: the kernels are registered for the CPU only."""
    backend = jax.default_backend()
    if backend != "cpu":
        raise NotImplementedError(
            f"rbdiff.jax: JAX's default backend is {backend!r}; rbdiff.jax runs on the CPU "
            "only for now (rbdiff.gpu is not wired to JAX yet, and no host copy is made "
            "silently). Run with JAX_PLATFORMS=cpu, or jax.default_device(jax.devices('cpu')[0]) "
            "with CPU arrays.")


def _float_dtype():
    return jnp.float64 if jax.config.jax_enable_x64 else jnp.float32


def _inputs(model, *named):
    """Check (name, array, length) triples at trace time: floating, last axis of the
    length, leading axes broadcastable; returns them broadcast, in one float dtype."""
    arrays = []
    if jax.config.jax_default_device is None or \
            getattr(jax.config.jax_default_device, "platform", "cpu") != "cpu":
        _backend_check()
    for name, x, n in named:
        _device_check(x)
        try:
            x = jnp.asarray(x)
        except TypeError as err:
            raise TypeError(f"{name}: expected an array, got {type(x).__name__}") from err
        if not (jnp.issubdtype(x.dtype, jnp.floating) or jnp.issubdtype(x.dtype, jnp.integer)):
            raise TypeError(f"{name}: expected a real floating array, got dtype {x.dtype}")
        if x.ndim == 0 or x.shape[-1] != n:
            raise ValueError(f"{name}: expected shape ({n},) or (..., {n}) for this model "
                             f"(nq={model.nq}, nv={model.nv}), got {x.shape}")
        arrays.append((name, x))
    try:
        lead = jnp.broadcast_shapes(*(x.shape[:-1] for _, x in arrays))
    except ValueError:
        shapes = ", ".join(f"{k} {x.shape}" for k, x in arrays)
        raise ValueError(f"leading (batch) axes do not broadcast: {shapes}") from None
    dt = jnp.result_type(_float_dtype(), *(x.dtype for _, x in arrays
                                           if jnp.issubdtype(x.dtype, jnp.floating)))
    return [jnp.broadcast_to(x.astype(dt), lead + x.shape[-1:]) for _, x in arrays]


def rnea(model, q, v, a):
    """Inverse dynamics tau (..., nv) of q (..., nq), v (..., nv), a (..., nv)."""
    return _rules(model).rnea(*_inputs(model, ("q", q, model.nq), ("v", v, model.nv),
                                       ("a", a, model.nv)))


def aba(model, q, v, tau):
    """Forward dynamics qdd (..., nv) of q (..., nq), v (..., nv), tau (..., nv)."""
    return _rules(model).aba(*_inputs(model, ("q", q, model.nq), ("v", v, model.nv),
                                      ("tau", tau, model.nv)))


def crba(model, q):
    """Joint-space inertia matrix M (..., nv, nv) of q (..., nq)."""
    return _rules(model).crba(*_inputs(model, ("q", q, model.nq)))


def minverse(model, q):
    """M^-1 (..., nv, nv) of q (..., nq), computed without forming M."""
    return _rules(model).minverse(*_inputs(model, ("q", q, model.nq)))


def nonlinear_effects(model, q, v):
    """C(q, v) v + g(q) (..., nv) of q (..., nq), v (..., nv)."""
    return _rules(model).nonlinear_effects(*_inputs(model, ("q", q, model.nq),
                                                    ("v", v, model.nv)))


def gravity(model, q):
    """Generalised gravity g(q) (..., nv) of q (..., nq)."""
    return _rules(model).gravity(*_inputs(model, ("q", q, model.nq)))


def rnea_derivatives(model, q, v, a):
    """RNEADerivatives(dtau_dq, dtau_dv, dtau_da), each (..., nv, nv); dtau_dq in the
    tangent space of q (as rbd.rnea_derivatives). Differentiable once (second-order
    kernels)."""
    r = _rules(model)
    _tau, *d = r.rnea_d(*_inputs(model, ("q", q, model.nq), ("v", v, model.nv),
                                 ("a", a, model.nv)))
    return RNEADerivatives(*d)


def aba_derivatives(model, q, v, tau):
    """ABADerivatives(dqdd_dq, dqdd_dv, dqdd_dtau), each (..., nv, nv), as
    rbd.aba_derivatives. Differentiable once (second-order kernels)."""
    _qdd, *d = _rules(model).aba_d(*_inputs(model, ("q", q, model.nq), ("v", v, model.nv),
                                            ("tau", tau, model.nv)))
    return ABADerivatives(*d)


def rnea_second_order_derivatives(model, q, v, a):
    """(d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq), each (..., nv, nv, nv), as
    rbd.rnea_second_order_derivatives. Not differentiable (no third-order kernel)."""
    return tuple(_rules(model).rnea_so(*_inputs(model, ("q", q, model.nq),
                                                ("v", v, model.nv), ("a", a, model.nv))))


def aba_second_order_derivatives(model, q, v, tau):
    """(d2qdd_dq2, d2qdd_dv2, d2qdd_dqdv, d2qdd_dtaudq), each (..., nv, nv, nv), as
    rbd.aba_second_order_derivatives. Not differentiable (no third-order kernel)."""
    return tuple(_rules(model).aba_so(*_inputs(model, ("q", q, model.nq),
                                               ("v", v, model.nv), ("tau", tau, model.nv))))


def integrate(model, q, v):
    """retract(q) (+) v (..., nq), as rbd.integrate; differentiated by JAX."""
    return _rules(model).integrate(*_inputs(model, ("q", q, model.nq), ("v", v, model.nv)))


def difference(model, q0, q1):
    """retract(q1) (-) retract(q0) (..., nv), as rbd.difference; differentiated by JAX."""
    return _rules(model).difference(*_inputs(model, ("q0", q0, model.nq),
                                              ("q1", q1, model.nq)))


def _frame_index(model, frame):
    if isinstance(frame, str):
        return model.get_frame_id(frame)     # KeyError naming close matches
    try:
        k = operator.index(frame)
    except TypeError:
        raise TypeError(f"frame: expected a frame name or an index into model.frames, "
                        f"got {frame!r}") from None
    n = len(model.frames)
    if not -n <= k < n:
        raise IndexError(f"frame: index {k} out of range for the {n} frames of the model")
    return k % n


def frame_placement(model, q, frame):
    """Placement (..., 4, 4) in the world of ``frame`` (a name or an index into
    model.frames) at q (..., nq). First derivatives only (from the frame's local
    Jacobian: dT = T [J_local e]^); a second derivative raises NotImplementedError."""
    k = _frame_index(model, frame)
    return _rules(model).frame_placement(k)(*_inputs(model, ("q", q, model.nq)))


def _reference(reference):
    """The kernel code of ``reference`` (reference_name: an error naming the spellings)."""
    return REFERENCE_CODES[reference_name(reference)]


def frame_velocity(model, q, v, frame, reference="local"):
    """Spatial velocity (..., 6) [linear, angular] of ``frame`` (a name or an index into
    model.frames) in ``reference`` ("local", "world", "local_world_aligned"), as
    rbd.frame_velocity; q (..., nq), v (..., nv). First derivatives only: the true ones
    (rbd.frame_velocity_derivatives, plus [w x dp/dq; 0] in "local_world_aligned")."""
    k, ref = _frame_index(model, frame), _reference(reference)
    return _rules(model).frame_velocity(k, ref)(
        *_inputs(model, ("q", q, model.nq), ("v", v, model.nv)))


def frame_acceleration(model, q, v, a, frame, reference="local", classical=False):
    """Spatial (``classical``: classical) acceleration (..., 6) of ``frame`` in
    ``reference``, as rbd.frame_acceleration; q (..., nq), v, a (..., nv). First
    derivatives only: the true ones (rbd.frame_acceleration_derivatives, plus
    [dw/dt x dp/dq; 0] for the spatial acceleration in "local_world_aligned")."""
    k, ref = _frame_index(model, frame), _reference(reference)
    if not isinstance(classical, bool):
        raise TypeError(f"classical: expected True or False, got {classical!r}")
    return _rules(model).frame_acceleration(k, ref, classical)(
        *_inputs(model, ("q", q, model.nq), ("v", v, model.nv), ("a", a, model.nv)))


def center_of_mass(model, q):
    """Centre of mass (..., 3), world frame, of q (..., nq), as rbd.center_of_mass(model,
    q). First derivative: rbd.com_jacobian."""
    return _rules(model).center_of_mass()(*_inputs(model, ("q", q, model.nq)))


def centroidal_momentum(model, q, v):
    """Centroidal momentum h = Ag(q) v (..., 6) [linear, angular], as
    rbd.centroidal_momentum(model, q, v). First derivatives: dh_dq of
    rbd.centroidal_dynamics_derivatives, and Ag."""
    return _rules(model).centroidal_momentum()(
        *_inputs(model, ("q", q, model.nq), ("v", v, model.nv)))


def potential_energy(model, q):
    """Gravitational potential energy (...) of q (..., nq), as rbd.potential_energy.
    Gradient gravity(q); Hessian from gravity's rule (rnea's kernels)."""
    return _rules(model).potential_energy()(*_inputs(model, ("q", q, model.nq)))


def kinetic_energy(model, q, v):
    """Kinetic energy 0.5 v^T M(q) v (...) of q (..., nq), v (..., nv), as
    rbd.kinetic_energy. First derivatives only: M v in v, 0.5 v^T dM/dq v in q
    (rbdiff.motion_partials)."""
    return _rules(model).kinetic_energy()(
        *_inputs(model, ("q", q, model.nq), ("v", v, model.nv)))


def contact_dynamics(model, q, v, tau, contacts):
    """Accelerations and contact forces of the model held by ``contacts`` (an rbd.Contact
    or a sequence), as rbd.contact_dynamics without damping or fext: q (..., nq), v, tau
    (..., nv) -> ContactDynamics(qdd (..., nv), forces (..., nc)), nc the set's
    constraint rows (3 per point contact, 6 per surface contact). First derivatives
    only, from rbd.contact_dynamics_derivatives (q through the retraction and the
    tangent map as above); a second derivative raises NotImplementedError. FFI handlers
    with the set's packed tables as operands (contacts.py): a set whose rows are
    dependent (the same frame twice) raises rbd.DependentContacts when traced; a NaN
    input, or a configuration where the rows happen to be dependent, gives NaN."""
    from . import contacts as _c
    return _c.contact_dynamics(model, q, v, tau, contacts, inputs=_inputs,
                               rules=_rules(model))


def impulse_dynamics(model, q, v_before, contacts, restitution=0.0):
    """The velocity jump of an impact with ``contacts``, as rbd.impulse_dynamics without
    damping: q (..., nq), v_before (..., nv) -> ImpulseDynamics(v_after (..., nv),
    impulses (..., nc)); ``restitution`` a number in [0, 1] (static). First derivatives
    only, from rbd.impulse_dynamics_derivatives; errors as contact_dynamics'."""
    from . import contacts as _c
    return _c.impulse_dynamics(model, q, v_before, contacts, restitution, inputs=_inputs,
                               rules=_rules(model))
