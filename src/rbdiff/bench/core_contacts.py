"""bench-core pairs of contact and impulse dynamics (rbdiff.contacts) against Pinocchio's
constraintDynamics / computeConstraintDynamicsDerivatives / impulseDynamics /
computeImpulseDynamicsDerivatives (bench/core.py's PAIR_MODULES convention:
``calls(model, pm, q, v, a)``, ``a`` taken as tau).

Rows only for floating-base robots whose feet the table below names: the point feet of
solo12, anymal and hyq (3D contacts), talos' soles (6D contacts), in LOCAL. Each side
runs one closure (the same Python call cost): rbdiff's public function against
Pinocchio's forward call, or its forward call and its derivative call (Pinocchio's
derivatives need the forward solution in its Data first). The rows compare qdd (resp.
dqdd_dq, v_after).

Where Crocoddyl is importable (bench/trajopt.py's crocoddyl_ok: Crocoddyl 3.2 with the
Pinocchio 4.0 it was built against, extra ``trajopt-bench``), one more row on robots with
point feet, ``contact_dynamics_derivatives[crocoddyl]``: Crocoddyl's
DifferentialActionModelContactFwdDynamics (ContactModel3D per foot, LOCAL, no gains,
a floating-base actuation, no costs) calc + calcDiff against
rbd.contact_dynamics_derivatives at the same torque (zero on the base), comparing
dqdd_dq with Fx[:, :nv]."""

import numpy as np

import rbdiff as rbd

try:
    import pinocchio as pin
except ImportError:
    pin = None

FEET = {"3d": ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"),
        "3d_anymal": ("LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"),
        "3d_hyq": ("lf_foot", "rf_foot", "lh_foot", "rh_foot"),
        "6d": ("left_sole_link", "right_sole_link")}


def contacts_of(model):
    """The robot's feet as rbd.Contact tuple (LOCAL), or None."""
    names = {f.name for f in model.frames}
    for key, feet in FEET.items():
        if all(f in names for f in feet) and model.nq == model.nv + 1:
            return tuple(rbd.Contact(f, key[:2]) for f in feet)
    return None


def _pin_contacts(model, pm, contacts):
    models = pin.StdVec_RigidConstraintModel()
    datas = pin.StdVec_RigidConstraintData()
    kinds = {"3d": pin.ContactType.CONTACT_3D, "6d": pin.ContactType.CONTACT_6D}
    for c in contacts:
        fr = pm.frames[pm.getFrameId(c.frame)]
        cm = pin.RigidConstraintModel(kinds[c.kind], pm, fr.parentJoint, fr.placement,
                                      pin.LOCAL)
        models.append(cm)
        datas.append(cm.createData())
    return models, datas


def calls(model, pm, q, v, a):
    """{name: (rbdiff call, Pinocchio call or None, post)}."""
    cs = contacts_of(model)
    if cs is None:
        return {}
    tau = a
    ours = {"contact_dynamics": lambda: rbd.contact_dynamics(model, q, v, tau, cs)[0],
            "contact_dynamics_derivatives":
                lambda: rbd.contact_dynamics_derivatives(model, q, v, tau, cs)[0],
            "impulse_dynamics": lambda: rbd.impulse_dynamics(model, q, v, cs)[0],
            "impulse_dynamics_derivatives":
                lambda: rbd.impulse_dynamics_derivatives(model, q, v, cs)[0]}
    if pm is None:
        return {k: (f, None, None) for k, f in ours.items()}
    models, datas = _pin_contacts(model, pm, cs)
    pd = pm.createData()
    pin.initConstraintDynamics(pm, pd, models, datas)
    prox = pin.ProximalSettings(1e-12, 1e-12, 0.0, 1)

    def forward():
        return pin.constraintDynamics(pm, pd, q, v, tau, models, datas, prox)

    def derivatives():
        pin.constraintDynamics(pm, pd, q, v, tau, models, datas, prox)
        return pin.computeConstraintDynamicsDerivatives(pm, pd, models, datas, prox)[0]

    def impulse():
        return pin.impulseDynamics(pm, pd, q, v, models, datas, 0.0, prox)

    def impulse_derivatives():
        pin.impulseDynamics(pm, pd, q, v, models, datas, 0.0, prox)
        pin.computeImpulseDynamicsDerivatives(pm, pd, models, datas, 0.0, prox)
        return pd.ddq_dq

    theirs = {"contact_dynamics": (forward, np.array),
              "contact_dynamics_derivatives": (derivatives, np.array),
              "impulse_dynamics": (impulse, np.array),
              "impulse_dynamics_derivatives": (impulse_derivatives, np.array)}
    pairs = {k: (ours[k], *theirs[k]) for k in ours}
    pairs.update(_crocoddyl_pair(model, pm, q, v, tau, cs))
    return pairs


def _crocoddyl_pair(model, pm, q, v, tau, cs):
    """{"contact_dynamics_derivatives[crocoddyl]": (ours, Crocoddyl's, post)} for point
    contacts where Crocoddyl is importable, else {}."""
    from .trajopt import crocoddyl_ok
    if cs[0].kind != "3d" or not crocoddyl_ok():
        return {}
    import crocoddyl
    state = crocoddyl.StateMultibody(pm)
    actuation = crocoddyl.ActuationModelFloatingBase(state)
    nu = actuation.nu
    stack = crocoddyl.ContactModelMultiple(state, nu)
    for c in cs:
        stack.addContact(c.frame, crocoddyl.ContactModel3D(
            state, pm.getFrameId(c.frame), np.zeros(3), pin.LOCAL, nu, np.zeros(2)))
    dam = crocoddyl.DifferentialActionModelContactFwdDynamics(
        state, actuation, stack, crocoddyl.CostModelSum(state, nu), 0.0, True)
    data = dam.createData()
    x, u = np.concatenate([q, v]), np.ascontiguousarray(tau[model.nv - nu:])
    tau_u = np.concatenate([np.zeros(model.nv - nu), u])     # the actuated torque

    def croc():
        dam.calc(data, x, u)
        dam.calcDiff(data, x, u)
        return data.Fx

    def ours():
        return rbd.contact_dynamics_derivatives(model, q, v, tau_u, cs)[0]

    return {"contact_dynamics_derivatives[crocoddyl]":
            (ours, croc, lambda Fx: np.array(Fx)[:, :model.nv])}
