"""Benchmark models: robots and synthetic models paired with their Pinocchio (and,
optionally, MuJoCo) twins.

Pinocchio's twin of a synthetic model is built joint by joint from the rbdiff Model
(its bindings cannot set the axis of a continuous joint, so such a joint becomes RUBZ in
a frame rotated by Ra, Ra e_z = axis, with its inertia and its children's placements
re-expressed in that frame: the same dynamics, in the same coordinates). A robot's twin
is Pinocchio's own URDF parser on the same file, with a free flyer where rbdiff has one.
MuJoCo's twin is an MJCF written from the rbdiff Model (no geoms, no contacts).
"""

import numpy as np

import rbdiff as rbd
from rbdiff.model import layout as L
from rbdiff.model.model import Model
from rbdiff.model.robots import default_floating_base, robot_path

try:
    import pinocchio as pin
except ImportError:
    pin = None

try:
    import mujoco
except ImportError:
    mujoco = None

FAMILIES = ("serial_chain", "binary_tree")


def _z_to(a):
    """A rotation taking e_z to the unit vector a."""
    z = np.array([0.0, 0.0, 1.0])
    v = np.cross(z, a)
    s, c = np.linalg.norm(v), z @ a
    if s < 1e-12:
        return np.eye(3) if c > 0 else np.diag([1.0, -1.0, -1.0])
    K = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]]) / s
    return np.eye(3) + s * K + (1 - c) * K @ K


def pin_twin(model):
    """Pinocchio's twin of an rbdiff Model (gravity included), built joint by joint."""
    if pin is None:
        raise ImportError("pinocchio is not installed")
    Ra = [np.eye(3) for _ in range(model.njoints)]
    for i in range(1, model.njoints):
        if model.joint_types[i] == L.REVOLUTE_UNBOUNDED:
            Ra[i] = _z_to(np.asarray(model.axes[i]))
    pm = pin.Model()
    pm.gravity = pin.Motion(np.concatenate([model.gravity, np.zeros(3)]))
    for i in range(1, model.njoints):
        t = int(model.joint_types[i])
        ax = np.array(model.axes[i])
        if t == L.REVOLUTE:
            jm = pin.JointModelRZ() if np.allclose(ax, [0, 0, 1]) \
                else pin.JointModelRevoluteUnaligned(ax)
        elif t == L.PRISMATIC:
            jm = pin.JointModelPrismaticUnaligned(ax)
        elif t == L.REVOLUTE_UNBOUNDED:
            jm = pin.JointModelRUBZ()
        elif t == L.SPHERICAL:
            jm = pin.JointModelSpherical()
        else:
            jm = pin.JointModelFreeFlyer()
        T = np.asarray(model.placements[i])
        lam = int(model.parents[i])
        R = Ra[lam].T @ T[:3, :3] @ Ra[i]
        p = Ra[lam].T @ T[:3, 3]
        jid = pm.addJoint(lam, jm, pin.SE3(R, p), model.names[i])
        pm.appendBodyToJoint(jid, pin.Inertia(float(model.masses[i]),
                                              Ra[i].T @ model.coms[i],
                                              Ra[i].T @ model.inertias[i] @ Ra[i]),
                             pin.SE3.Identity())
    return pm


def with_gravity(model, gravity):
    """A copy of ``model`` with another gravity vector (Models are immutable)."""
    return Model(model.names, model.parents, model.joint_types, np.array(model.placements),
                 np.array(model.axes), np.array(model.masses), np.array(model.coms),
                 np.array(model.inertias), list(model.frames),
                 np.asarray(gravity, dtype=float), np.array(model.lower_limits),
                 np.array(model.upper_limits), effort_limits=model.effort_limits,
                 velocity_limits=model.velocity_limits)._freeze()


def robot_label(name):
    """'hyq + free-flyer' for robots with a floating base, else the name."""
    return f"{name} + free-flyer" if default_floating_base(name) else name


def robot_pair(name, gravity=None):
    """(rbdiff Model, Pinocchio model or None) of robot ``name`` with its usual base.
    ``gravity`` (3,) replaces the model's gravity in both. Raises ImportError or OSError
    when example-robot-data (or a URDF) is missing."""
    floating = default_floating_base(name)
    model = rbd.load_robot(name, floating_base=floating)
    if gravity is not None:
        model = with_gravity(model, gravity)
    pm = None
    if pin is not None:
        path = str(robot_path(name))
        pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating \
            else pin.buildModelFromUrdf(path)
        if (pm.nq, pm.nv) != (model.nq, model.nv):
            raise ValueError(f"{name}: Pinocchio's model has (nq, nv) = {(pm.nq, pm.nv)}, "
                             f"rbdiff's {(model.nq, model.nv)}")
        if gravity is not None:
            pm.gravity = pin.Motion(np.concatenate([np.asarray(gravity, float),
                                                    np.zeros(3)]))
    return model, pm


def synthetic(family, n, gravity=(0.0, 0.0, -9.81)):
    """rbd.models.serial_chain(n) or binary_tree(n)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")
    return getattr(rbd.models, family)(n, gravity=gravity)


def synthetic_pair(family, n, gravity=(0.0, 0.0, -9.81)):
    """(rbdiff Model, Pinocchio twin or None) of a serial chain / binary tree."""
    model = synthetic(family, n, gravity)
    return model, (pin_twin(model) if pin is not None else None)


# ---------------------------------------------------------------- MuJoCo twin

def _quat_wxyz(R):
    """MuJoCo's [w, x, y, z] quaternion of a rotation matrix."""
    t = np.trace(R)
    if t > 0:
        s = np.sqrt(t + 1.0) * 2
        q = [0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s,
             (R[1, 0] - R[0, 1]) / s]
    else:
        k = int(np.argmax(np.diag(R)))
        i, j = (k + 1) % 3, (k + 2) % 3
        s = np.sqrt(1.0 + R[k, k] - R[i, i] - R[j, j]) * 2
        q = [0.0] * 4
        q[0] = (R[j, i] - R[i, j]) / s
        q[1 + k] = 0.25 * s
        q[1 + i] = (R[i, k] + R[k, i]) / s
        q[1 + j] = (R[j, k] + R[k, j]) / s
    q = np.array(q)
    return q / np.linalg.norm(q)


def _f(x):
    return " ".join(f"{float(v):.17g}" for v in np.ravel(x))


def mjcf(model):
    """An MJCF string of ``model``: one body per joint (placement, inertia about the
    com), no geoms, contacts off. Continuous joints become hinges (nq 1 instead of 2)."""
    kids = {i: [] for i in range(model.njoints)}
    for i in range(1, model.njoints):
        kids[int(model.parents[i])].append(i)
    kinds = {L.REVOLUTE: "hinge", L.REVOLUTE_UNBOUNDED: "hinge", L.PRISMATIC: "slide",
             L.SPHERICAL: "ball"}

    def body(i, ind):
        T = np.asarray(model.placements[i])
        m = max(float(model.masses[i]), 1e-9)
        I = np.asarray(model.inertias[i])
        full = [I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]
        t = int(model.joint_types[i])
        if t == L.FREE_FLYER:
            joint = f'{ind} <freejoint name="j{i}"/>'
        else:
            limited = ' limited="false"' if t != L.SPHERICAL else ""
            joint = (f'{ind} <joint name="j{i}" type="{kinds[t]}"'
                     + (f' axis="{_f(model.axes[i])}"' if t != L.SPHERICAL else "")
                     + f'{limited} damping="0" armature="0"/>')
        lines = [f'{ind}<body name="b{i}" pos="{_f(T[:3, 3])}" '
                 f'quat="{_f(_quat_wxyz(T[:3, :3]))}">', joint,
                 f'{ind} <inertial pos="{_f(model.coms[i])}" mass="{m:.17g}" '
                 f'fullinertia="{_f(full)}"/>']
        for c in kids[i]:
            lines += body(c, ind + " ")
        lines.append(f"{ind}</body>")
        return lines

    g = _f(model.gravity)
    out = ['<mujoco model="rbdiff">',
           ' <compiler angle="radian" inertiafromgeom="false" balanceinertia="true" '
           'boundmass="1e-9" boundinertia="1e-12"/>',
           f' <option gravity="{g}" integrator="Euler">',
           '  <flag contact="disable" constraint="disable"/>',
           ' </option>', ' <worldbody>']
    for c in kids[0]:
        out += body(c, "  ")
    out += [" </worldbody>", "</mujoco>"]
    return "\n".join(out)


def mujoco_twin(model):
    """(MjModel, MjData) of ``model``; raises ImportError without mujoco."""
    if mujoco is None:
        raise ImportError("mujoco is not installed (pip install mujoco)")
    mm = mujoco.MjModel.from_xml_string(mjcf(model))
    return mm, mujoco.MjData(mm)


def mujoco_comparable(model):
    """True when MuJoCo's coordinates are rbdiff's: revolute and prismatic joints only
    (a free joint's velocity is expressed differently; a continuous joint has nq 1)."""
    return all(int(t) in (L.REVOLUTE, L.PRISMATIC) for t in model.joint_types[1:])


def mujoco_q(model, q):
    """rbdiff's configuration in MuJoCo's layout: quaternions [w, x, y, z], continuous
    joints as an angle."""
    q = np.asarray(q, dtype=float)
    out = []
    for i in range(1, model.njoints):
        t, k = int(model.joint_types[i]), int(model.idx_q[i])
        if t == L.FREE_FLYER:
            out += [*q[k:k + 3], q[k + 6], *q[k + 3:k + 6]]
        elif t == L.SPHERICAL:
            out += [q[k + 3], *q[k:k + 3]]
        elif t == L.REVOLUTE_UNBOUNDED:
            out.append(np.arctan2(q[k + 1], q[k]))
        else:
            out.append(q[k])
    return np.array(out)


FOUR_FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")


def solo12_four_feet(batch, seed=0):
    """The front ends' contact benchmark case (bench.jax, bench.torch): solo12 + free
    flyer standing on its four feet (3D point contacts, LOCAL_WORLD_ALIGNED, Baumgarte
    gains (2, 1) toward the identity placement) and ``batch`` random states. Returns
    (model, feet, (q, v, tau) of the first state, (q, v, tau) of the batch)."""
    model = rbd.load_robot("solo12", floating_base=True)
    feet = tuple(rbd.Contact(f, "3d", "local_world_aligned", gains=(2.0, 1.0),
                             placement=np.eye(4)) for f in FOUR_FEET)
    rng = np.random.default_rng(seed)
    qb = rbd.random_configuration(model, rng, batch=batch)
    vb, tb = rng.normal(size=(batch, model.nv)), rng.normal(size=(batch, model.nv))
    return model, feet, (qb[0].copy(), vb[0].copy(), tb[0].copy()), (qb, vb, tb)
