"""The public functions trajopt calls at every iteration, on float64 C-contiguous batches
(K, n) of its states and controls, with frames and contact sets resolved once: their
declared batch pairs by declare.Function.fast_batch (a few attribute reads instead of
the general path's checks and the public wrappers' single-call attempts and name
lookups: ~5 us less a call, of 30-40 calls an FDDP iteration). Same entries, same
results; other input takes the general path."""

from ..contacts import DependentContacts, _raise_dependent
from ..declare import DECLARED, reference_code


def _run(name, model, *xs, options=(), sizes=None):
    return DECLARED[name].fast_batch(model, *xs, options=options, sizes=sizes)


def frame_placement(model, q, fid):
    """(K, 4, 4) of frame index ``fid``."""
    return _run("frame_placement", model, q, options=(fid,))


def frame_jacobian(model, q, fid, reference):
    """(K, 6, nv)."""
    return _run("frame_jacobian", model, q, options=(fid, reference_code(reference)))


def frame_velocity(model, q, v, fid, reference):
    """(K, 6)."""
    return _run("frame_velocity", model, q, v, options=(fid, reference_code(reference)))


def frame_velocity_derivatives(model, q, v, fid, reference):
    """(dv_dq, dv_dv) (K, 6, nv) each."""
    return _run("frame_velocity_derivatives", model, q, v,
                options=(fid, reference_code(reference)))


def center_of_mass(model, q):
    """(K, 3)."""
    return _run("center_of_mass", model, q, None, None)


def com_jacobian(model, q):
    """(K, 3, nv)."""
    return _run("com_jacobian", model, q)


def difference(model, q0, q1):
    """q1 (-) q0 (K, nv), both (K, nq)."""
    return _run("difference", model, q0, q1)


def difference_jacobians(model, q0, q1):
    """DifferenceJacobians (dq0, dq1) (K, nv, nv) each."""
    return _run("difference_jacobians", model, q0, q1)


def integrate_jacobians(model, q, v):
    """IntegrateJacobians (dq, dv) (K, nv, nv) each."""
    return _run("integrate_jacobians", model, q, v)


def contact_dynamics_derivatives(model, q, v, tau, packed, contacts):
    """ContactDynamicsDerivatives of the contact set ``contacts`` packed as contacts.pack
    gives it (cint, cflt, nc), nc > 0, no damping."""
    cint, cflt, nc = packed
    try:
        return _run("contact_dynamics_derivatives", model, q, v, tau,
                    options=(cint, cflt, 0.0), sizes={"nc": nc})
    except DependentContacts as e:     # name the rows and frames, as the public call does
        _raise_dependent(e, model, q, contacts)


def impulse_dynamics_derivatives(model, q, v, packed, contacts):
    """ImpulseDynamicsDerivatives (restitution 0, no damping) of a packed contact set."""
    cint, cflt, nc = packed
    try:
        return _run("impulse_dynamics_derivatives", model, q, v,
                    options=(cint, cflt, 0.0, 0.0), sizes={"nc": nc})
    except DependentContacts as e:
        _raise_dependent(e, model, q, contacts)
