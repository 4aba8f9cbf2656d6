"""Centre of mass, centroidal momentum, energies and the centroidal dynamics derivatives
(Pinocchio's computeTotalMass, centerOfMass, jacobianCenterOfMass, computeCentroidalMap,
computeCentroidalMomentum(TimeVariation), computeCentroidalDynamicsDerivatives,
computeKineticEnergy, computePotentialEnergy).

Every function takes one state (q of shape (nq,), ...) or a batch with a leading axis
(q of shape (B, nq), ...) and returns the same leading axis; float64, float32 and
complex128 (complex step) inputs compute in their own type. The math is in
kernels/centroidal.py and kernels/centroidal_derivatives.py (their docstrings give the
formulas), the entry points in cpu/centroidal.py; batches equal a loop of single calls
bit for bit.
"""

import numpy as np

from .cpu import centroidal as cc
from .cpu import policy
from .kernels.workspace import single_call_scratch
from .model.layout import MF_MASS
from .results import (CenterOfMassAcceleration, CenterOfMassVelocity,
                      CentroidalDynamicsDerivatives, CentroidalMomentum)
from .validation import explain, prepare


def _no_com(model):
    return ValueError(f"the model has no centre of mass: its total mass is "
                      f"{total_mass(model)!r} (every body is massless)")


def _call(model, one, batched, named, shapes):
    """Validate the inputs ``named`` ((name, x, length) in call order, q first), then
    run the single entry ``one`` (with a workspace) or the batch pair ``batched`` into
    new outputs of ``shapes`` (after the batch axis); None entries of ``named`` pass
    None. Returns the outputs as a list."""
    given = [(n, x, k) for n, x, k in named if x is not None]
    arrays, _, batch, mf = prepare(model, None, given, wants_fext=False)
    it = iter(arrays)
    inputs = [None if x is None else next(it) for _, x, _ in named]
    dt = arrays[0].dtype
    lead = () if batch is None else (batch,)
    outs = [None if s is None else np.empty(lead + s, dt) for s in shapes]
    try:
        if batch is None:
            ws = single_call_scratch(model.njoints, model.nv, dt, False)[0]
            one(model.mi, mf, *inputs, ws, *outs)
        else:
            policy.run(model, *batched, batch, (model.mi, mf, *inputs, *outs))
    except ValueError as e:
        if str(e) == cc.NO_COM:
            raise _no_com(model) from None
        raise explain(model, [(n, x) for (n, _, _), x in zip(given, arrays)], None,
                      error=e) from None
    return outs


def _scalar(x):
    """A 0-d result as a NumPy scalar; a batch's (B,) array as it is."""
    return x[()] if x.ndim == 0 else x


def total_mass(model):
    """Total mass of the model's bodies (float), Pinocchio's computeTotalMass."""
    return float(np.sum(model.mf[1:, MF_MASS]))


def center_of_mass(model, q, v=None, a=None):
    """Centre of mass of the whole model in the world frame, com (3,) (Pinocchio's
    centerOfMass(model, data, q): data.com[0]); with v, CenterOfMassVelocity(com, vcom);
    with v and a, CenterOfMassAcceleration(com, vcom, acom) (data.vcom[0], data.acom[0]:
    the time derivatives of com, gravity excluded). M com = sum_i m_i c_i,
    M vcom = sum_i [Y_i v_i]_lin, M acom = sum_i [Y_i a_i]_lin + w_i x [Y_i v_i]_lin.

    q (nq,), v and a (nv,) or None (a needs v); a leading batch axis (B, nq), (B, nv)
    gives (B, 3) each. ValueError when the model's total mass is zero."""
    if a is not None and v is None:
        v = np.zeros_like(np.asarray(a))
    named = [("q", q, model.nq), ("v", v, model.nv), ("a", a, model.nv)]
    shapes = [(3,), None if v is None else (3,), None if a is None else (3,)]
    com, vcom, acom = _call(model, cc.center_of_mass_one,
                            (cc.center_of_mass_batch, cc.center_of_mass_parallel),
                            named, shapes)
    if v is None:
        return com
    if a is None:
        return CenterOfMassVelocity(com, vcom)
    return CenterOfMassAcceleration(com, vcom, acom)


def com_jacobian(model, q):
    """Jacobian of the centre of mass, (3, nv), world frame: d com / dq in the tangent
    space, so that vcom = J v (Pinocchio's jacobianCenterOfMass). Column k of a dof of
    joint j is [IC_j S_k]_lin / M (IC_j the composite inertia of j's subtree). A batch q
    (B, nq) gives (B, 3, nv). ValueError when the model's total mass is zero."""
    return _call(model, cc.com_jacobian_one, (cc.com_jacobian_batch,
                                              cc.com_jacobian_parallel),
                 [("q", q, model.nq)], [(3, model.nv)])[0]


def centroidal_momentum_matrix(model, q):
    """Centroidal momentum matrix Ag (6, nv): h = Ag v, [linear; angular] momentum about
    the centre of mass, world axes (Orin, Goswami & Lee 2013; Pinocchio's
    computeCentroidalMap, and ccrba's data.Ag). Column k of a dof of joint j is
    IC_j S_k moved to the com. A batch q (B, nq) gives (B, 6, nv). ValueError when the
    model's total mass is zero."""
    return _call(model, cc.centroidal_map_one, (cc.centroidal_map_batch,
                                                cc.centroidal_map_parallel),
                 [("q", q, model.nq)], [(6, model.nv)])[0]


def centroidal_momentum(model, q, v, a=None):
    """Centroidal momentum h = Ag(q) v (6,) [linear; angular] about the centre of mass,
    world axes (Pinocchio's computeCentroidalMomentum: data.hg); with a,
    CentroidalMomentum(h, hdot) with hdot = dh/dt (6,)
    (computeCentroidalMomentumTimeVariation: data.dhg). As Pinocchio's dhg, hdot excludes
    gravity: it is the rate of h along (q, v, a), which the net external wrench equals
    only once the weight M g is added to it.

    q (nq,), v and a (nv,); a leading batch axis gives (B, 6). ValueError when the
    model's total mass is zero."""
    named = [("q", q, model.nq), ("v", v, model.nv), ("a", a, model.nv)]
    h, hdot = _call(model, cc.centroidal_momentum_one,
                    (cc.centroidal_momentum_batch, cc.centroidal_momentum_parallel),
                    named, [(6,), None if a is None else (6,)])
    return h if a is None else CentroidalMomentum(h, hdot)


def centroidal_dynamics_derivatives(model, q, v, a):
    """Partial derivatives of the centroidal momentum h(q, v) and of its rate
    hdot(q, v, a) (centroidal_momentum), CentroidalDynamicsDerivatives(dh_dq, dhdot_dq,
    dhdot_dv, dhdot_da), each (6, nv) (Pinocchio's computeCentroidalDynamicsDerivatives,
    which returns the same four; dhdot_da = dh_dv = Ag). q-derivatives are taken in the
    tangent space and include the motion of the centre of mass the momentum is taken
    about. Analytical, one forward and one backward pass (kernels/centroidal_derivatives.py).
    A batch (B, nq), (B, nv) gives (B, 6, nv) each. ValueError when the model's total
    mass is zero."""
    s = (6, model.nv)
    return CentroidalDynamicsDerivatives(*_call(
        model, cc.centroidal_derivatives_one,
        (cc.centroidal_derivatives_batch, cc.centroidal_derivatives_parallel),
        [("q", q, model.nq), ("v", v, model.nv), ("a", a, model.nv)], [s, s, s, s]))


def kinetic_energy(model, q, v):
    """Kinetic energy 0.5 v^T M(q) v (armature included), a scalar (Pinocchio's
    computeKineticEnergy(model, data, q, v)): 0.5 sum_i v_i . Y_i v_i + 0.5 sum_k
    armature_k v_k^2. A batch (B, nq), (B, nv) gives (B,)."""
    return _scalar(_call(model, cc.kinetic_energy_one,
                         (cc.kinetic_energy_batch, cc.kinetic_energy_parallel),
                         [("q", q, model.nq), ("v", v, model.nv)], [()])[0])


def potential_energy(model, q):
    """Gravitational potential energy -sum_i m_i g . c_i, a scalar (Pinocchio's
    computePotentialEnergy(model, data, q)), with g = model.gravity. A batch (B, nq)
    gives (B,)."""
    return _scalar(_call(model, cc.potential_energy_one,
                         (cc.potential_energy_batch, cc.potential_energy_parallel),
                         [("q", q, model.nq)], [()])[0])
