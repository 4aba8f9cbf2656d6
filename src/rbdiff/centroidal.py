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

from .cpu import fronts as _fronts
from .cpu.fronts import bind as _bind
from .cpu import centroidal as cc
from .cpu.scratch import HELD as _HELD
from .declare import Function
from .kernels.jit import native_ref
from .model.layout import MF_MASS
from .model.model import Model
from .results import (CenterOfMassAcceleration, CenterOfMassVelocity,
                      CentroidalDynamicsDerivatives, CentroidalMomentum)

# Fast paths for single float64 1-D calls, as api.py's and kinematics.py's: compiled fronts
# (cpu/fronts.py) that run the entries on cpu.scratch's HELD workspace (they hold the GIL)
# and check the state's types themselves; the energies' and the derivatives' entries are
# bound natively (jit.native_ref: False when not float64 1-D ndarrays). Any miss (another
# dtype or ndim, a refused input, a massless model) takes the general path, which names
# the problem.
_FAST_MISS = (AttributeError, TypeError, ValueError)
_empty = np.empty
_new = tuple.__new__          # a result NamedTuple without its Python __new__
_S3 = (3,)
_S6 = (6,)
# (outputs: made by the entry from the shapes given, kernels.fastargs.output_arg)
# (compiled fronts, cpu/fronts.py: they take the call's own arguments and read the
# model's record; the entries they run make the outputs from the shapes given)
_com_q = _bind(_fronts.com_q_front, "_com_q", globals(), shapes=(2,))
_com_qv = _bind(_fronts.com_qv_front, "_com_qv", globals(), shapes=(3,))
_com_qva = _bind(_fronts.com_qva_front, "_com_qva", globals(), shapes=(4,))
_com_jacobian_front = _bind(_fronts.com_jacobian_front, "_com_jacobian_front", globals())
_centroidal_map_front = _bind(_fronts.centroidal_map_front, "_centroidal_map_front",
                              globals())
_momentum_qv = _bind(_fronts.momentum_qv_front, "_momentum_qv", globals(), shapes=(3,))
_momentum_qva = _bind(_fronts.momentum_qva_front, "_momentum_qva", globals(), shapes=(4,))
_derivatives_one = native_ref(cc.centroidal_derivatives_one, "_derivatives_one", globals(),
                              (2, 3, 4))
_kinetic_one = native_ref(cc.kinetic_energy_one, "_kinetic_one", globals(), (2, 3))
_potential_one = native_ref(cc.potential_energy_one, "_potential_one", globals(), (2,))
# the total mass, summed once per model (models are immutable): one attribute load a call
Model.cache("_total_mass", lambda m: float(np.sum(m.mf[1:, MF_MASS])))


def _no_com(model):
    return ValueError(f"the model has no centre of mass: its total mass is "
                      f"{total_mass(model)!r} (every body is massless)")


_Q = (("q", "nq"),)
_QV = _Q + (("v", "nv"),)
_QVA = _QV + (("a", "nv"),)
_OPT_VA = _Q + (("v", "nv", "optional"), ("a", "nv", "optional"))


def _declare(name, entry, inputs, outputs, needs=None, result=None):
    """The general path of centroidal function ``name`` (declare.py) on the cpu/centroidal
    entries ``entry``_one / _batch / _parallel."""
    return Function(name, getattr(cc, entry + "_one"),
                    (getattr(cc, entry + "_batch"), getattr(cc, entry + "_parallel")),
                    inputs, outputs, needs=needs, result=result, errors={cc.NO_COM: _no_com})


_COM = _declare("center_of_mass", "center_of_mass", _OPT_VA, ((3,),) * 3, (None, "v", "a"),
                {2: CenterOfMassVelocity, 3: CenterOfMassAcceleration})
_COM_J = _declare("com_jacobian", "com_jacobian", _Q, ((3, "nv"),))
_AG = _declare("centroidal_momentum_matrix", "centroidal_map", _Q, ((6, "nv"),))
_H = _declare("centroidal_momentum", "centroidal_momentum", _QV + _OPT_VA[2:],
              ((6,),) * 2, (None, "a"), {2: CentroidalMomentum})
_CD = _declare("centroidal_dynamics_derivatives", "centroidal_derivatives", _QVA,
               ((6, "nv"),) * 4, result=CentroidalDynamicsDerivatives)
_KE = _declare("kinetic_energy", "kinetic_energy", _QV, ((),))
_PE = _declare("potential_energy", "potential_energy", _Q, ((),))


def _scalar(x):
    """A 0-d result as a NumPy scalar; a batch's (B,) array as it is."""
    return x[()] if x.ndim == 0 else x


def total_mass(model):
    """Total mass of the model's bodies (float), Pinocchio's computeTotalMass."""
    return model._total_mass


def center_of_mass(model, q, v=None, a=None):
    """Centre of mass of the whole model in the world frame, com (3,) (Pinocchio's
    centerOfMass(model, data, q): data.com[0]); with v, CenterOfMassVelocity(com, vcom);
    with v and a, CenterOfMassAcceleration(com, vcom, acom) (data.vcom[0], data.acom[0]:
    the time derivatives of com, gravity excluded). M com = sum_i m_i c_i,
    M vcom = sum_i [Y_i v_i]_lin, M acom = sum_i [Y_i a_i]_lin + w_i x [Y_i v_i]_lin.

    q (nq,), v and a (nv,) or None (a needs v); a leading batch axis (B, nq), (B, nv)
    gives (B, 3) each. ValueError when the model's total mass is zero."""
    try:    # fast path (see _FAST_MISS); the entry checks types, lengths and values and
        # makes the outputs from their shapes
        if v is None:
            r = None if a is not None else _com_q(model, q, _S3)
        elif a is None:
            r = _com_qv(model, q, v, _S3, CenterOfMassVelocity)
        else:
            r = _com_qva(model, q, v, a, _S3, CenterOfMassAcceleration)
        if r is not None:
            return r
    except _FAST_MISS:
        pass
    if a is not None and v is None:
        v = np.zeros_like(np.asarray(a))
    return _COM(model, q, v, a)


def com_jacobian(model, q):
    """Jacobian of the centre of mass, (3, nv), world frame: d com / dq in the tangent
    space, so that vcom = J v (Pinocchio's jacobianCenterOfMass). Column k of a dof of
    joint j is [IC_j S_k]_lin / M (IC_j the composite inertia of j's subtree). A batch q
    (B, nq) gives (B, 3, nv). ValueError when the model's total mass is zero."""
    try:
        J = _com_jacobian_front(model, q)
        if J is not None:
            return J
    except _FAST_MISS:
        pass
    return _COM_J(model, q)


def centroidal_momentum_matrix(model, q):
    """Centroidal momentum matrix Ag (6, nv): h = Ag v, [linear; angular] momentum about
    the centre of mass, world axes (Orin, Goswami & Lee 2013; Pinocchio's
    computeCentroidalMap, and ccrba's data.Ag). Column k of a dof of joint j is
    IC_j S_k moved to the com. A batch q (B, nq) gives (B, 6, nv). ValueError when the
    model's total mass is zero."""
    try:
        Ag = _centroidal_map_front(model, q)
        if Ag is not None:
            return Ag
    except _FAST_MISS:
        pass
    return _AG(model, q)


def centroidal_momentum(model, q, v, a=None):
    """Centroidal momentum h = Ag(q) v (6,) [linear; angular] about the centre of mass,
    world axes (Pinocchio's computeCentroidalMomentum: data.hg); with a,
    CentroidalMomentum(h, hdot) with hdot = dh/dt (6,)
    (computeCentroidalMomentumTimeVariation: data.dhg). As Pinocchio's dhg, hdot excludes
    gravity: it is the rate of h along (q, v, a), which the net external wrench equals
    only once the weight M g is added to it.

    q (nq,), v and a (nv,); a leading batch axis gives (B, 6). ValueError when the
    model's total mass is zero."""
    try:    # the entry makes h (and hdot) from their shapes
        r = (_momentum_qv(model, q, v, _S6) if a is None
             else _momentum_qva(model, q, v, a, _S6, CentroidalMomentum))
        if r is not None:
            return r
    except _FAST_MISS:
        pass
    return _H(model, q, v, a)


def centroidal_dynamics_derivatives(model, q, v, a):
    """Partial derivatives of the centroidal momentum h(q, v) and of its rate
    hdot(q, v, a) (centroidal_momentum), CentroidalDynamicsDerivatives(dh_dq, dhdot_dq,
    dhdot_dv, dhdot_da), each (6, nv) (Pinocchio's computeCentroidalDynamicsDerivatives,
    which returns the same four; dhdot_da = dh_dv = Ag). q-derivatives are taken in the
    tangent space and include the motion of the centre of mass the momentum is taken
    about. Analytical, one forward and one backward pass (kernels/centroidal_derivatives.py).
    A batch (B, nq), (B, nv) gives (B, 6, nv) each. ValueError when the model's total
    mass is zero."""
    s = model._sJ
    out = (_empty(s), _empty(s), _empty(s), _empty(s))
    try:
        if _derivatives_one(model.mi, model.mf, q, v, a, _HELD[model._scratch_key], *out):
            return _new(CentroidalDynamicsDerivatives, out)
    except _FAST_MISS:
        pass
    return _CD(model, q, v, a)


def kinetic_energy(model, q, v):
    """Kinetic energy 0.5 v^T M(q) v (armature included), a scalar (Pinocchio's
    computeKineticEnergy(model, data, q, v)): 0.5 sum_i v_i . Y_i v_i + 0.5 sum_k
    armature_k v_k^2. A batch (B, nq), (B, nv) gives (B,)."""
    try:    # NaN: not float64 vectors (a checked energy is finite)
        e = _kinetic_one(model.mi, model.mf, q, v, _HELD[model._scratch_key], None)
        if e == e:
            return e
    except _FAST_MISS:
        pass
    return _scalar(_KE(model, q, v))


def potential_energy(model, q):
    """Gravitational potential energy -sum_i m_i g . c_i, a scalar (Pinocchio's
    computePotentialEnergy(model, data, q)), with g = model.gravity. A batch (B, nq)
    gives (B,)."""
    try:
        e = _potential_one(model.mi, model.mf, q, _HELD[model._scratch_key], None)
        if e == e:
            return e
    except _FAST_MISS:
        pass
    return _scalar(_PE(model, q))
