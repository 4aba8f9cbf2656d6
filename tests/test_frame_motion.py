"""rbd.frame_velocity, frame_acceleration (spatial and classical),
frame_jacobian_time_variation, frame_velocity_derivatives and
frame_acceleration_derivatives (kernels/frame_motion.py) against Pinocchio 4.1's
getFrameVelocity / getFrameAcceleration / getFrameClassicalAcceleration /
getFrameJacobianTimeVariation / getFrameVelocityDerivatives /
getFrameAccelerationDerivatives, against the complex step through rbdiff's own complex128
value functions, and against the identity dJ v + J a = the frame's acceleration.

Where Pinocchio's getters are not the derivatives of its own values the tests say by how
much (kernels/frame_motion.py's docstring): in LOCAL_WORLD_ALIGNED it holds the frame
origin fixed (dv_dq and da_dq lack w x dp/dq and dw/dt x dp/dq; rbdiff's spatial
derivatives follow it, its classical ones do not), and in WORLD and LOCAL_WORLD_ALIGNED
its da_dq columns of a multi-dof joint below the root are off."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from conftest import rel_err, robot_pair
from pin_bridge import frame_rotations, to_pinocchio
from rbdiff.cpu import policy
from rbdiff.model.model import Frame, FrameType, Model
from rbdiff.results import FrameAccelerationDerivatives, FrameVelocityDerivatives

PIN_REFS = {"local": pin.LOCAL, "world": pin.WORLD,
            "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
TOL = 1e-10


def framed_tree(seed, floating, n=8):
    """A random tree (every joint type) with one OP frame at a random placement on each
    joint, and its Pinocchio twin with the same frames (same indices); the frames."""
    base = rbd.models.random_tree(n, seed, floating_base=floating)
    rng = np.random.default_rng(100 + seed)
    extra = []
    for i in range(1, base.njoints):
        T = np.eye(4)
        T[:3, :3] = _rotation(rng)
        T[:3, 3] = rng.uniform(-0.4, 0.4, size=3)
        extra.append(Frame(f"tool{i}", i, T, FrameType.OP_FRAME, 0))
    model = Model(base.names, base.parents, base.joint_types, base.placements, base.axes,
                  base.masses, base.coms, base.inertias, base.frames + tuple(extra),
                  base.gravity, base.lower_limits, base.upper_limits)._freeze()
    pm = to_pinocchio(model)
    Ra = frame_rotations(model)     # the twin's continuous joints sit in rotated frames
    for f in model.frames[1:]:
        j = f.parent
        pm.addFrame(pin.Frame(f.name, j, 0, pin.SE3(Ra[j].T @ f.placement[:3, :3],
                                                     Ra[j].T @ f.placement[:3, 3]),
                              pin.FrameType.OP_FRAME))
    assert pm.nframes == len(model.frames)
    return model, pm, [len(base.frames) + k for k in range(len(extra))]


def _rotation(rng):
    Q, R = np.linalg.qr(rng.normal(size=(3, 3)))
    Q = Q * np.sign(np.diag(R))
    return Q if np.linalg.det(Q) > 0 else -Q


ROBOT_FRAMES = [("solo12", True, "FL_FOOT"), ("talos_full_v2", True, "left_sole_link"),
                ("panda", False, "panda_hand_tcp"), ("anymal", True, "LF_FOOT")]
_CASES = {}


def case(key):
    """(model, pm, frame indices) for a tree seed or a robot."""
    if key not in _CASES:
        if isinstance(key, int):
            _CASES[key] = framed_tree(key, key % 2 == 1)
        else:
            name, ff, frame = next(r for r in ROBOT_FRAMES if r[0] == key)
            model, pm = robot_pair(name, ff)
            _CASES[key] = (model, pm, [model.get_frame_id(frame)])
    return _CASES[key]


KEYS = [0, 1, 2, 3] + [r[0] for r in ROBOT_FRAMES]


def _state(model, seed):
    rng = np.random.default_rng(seed)
    return rbd.random_configuration(model, rng), *rng.normal(size=(2, model.nv))


def _multi_dof_below_root(model):
    """Columns of spherical / free-flyer joints that have a parent."""
    cols = np.zeros(model.nv, bool)
    for i in range(1, model.njoints):
        if model.nvs[i] > 1 and model.parents[i] > 0:
            cols[model.idx_v[i]:model.idx_v[i] + model.nvs[i]] = True
    return cols


def test_every_joint_type_on_the_trees():
    kinds = set()
    for seed in range(4):
        model = case(seed)[0]
        kinds |= {int(t) for t in model.joint_types[1:]}
    assert kinds == {0, 1, 2, 3, 4}
    assert any(_multi_dof_below_root(case(s)[0]).any() for s in range(4))


@pytest.mark.parametrize("key", KEYS)
def test_values_match_pinocchio(key):
    model, pm, frames = case(key)
    q, v, a = _state(model, 1)
    pd = pm.createData()
    pin.forwardKinematics(pm, pd, q, v, a)
    pin.updateFramePlacements(pm, pd)
    pin.computeJointJacobiansTimeVariation(pm, pd, q, v)
    for f in frames:
        for ref, pref in PIN_REFS.items():
            assert rel_err(rbd.frame_velocity(model, q, v, f, ref),
                           pin.getFrameVelocity(pm, pd, f, pref).vector) < TOL
            assert rel_err(rbd.frame_acceleration(model, q, v, a, f, ref),
                           pin.getFrameAcceleration(pm, pd, f, pref).vector) < TOL
            assert rel_err(rbd.frame_acceleration(model, q, v, a, f, ref, classical=True),
                           pin.getFrameClassicalAcceleration(pm, pd, f, pref).vector) < TOL
            dJ = rbd.frame_jacobian_time_variation(model, q, v, f, ref)
            assert dJ.shape == (6, model.nv)
            assert rel_err(dJ, pin.getFrameJacobianTimeVariation(pm, pd, f, pref)) < TOL
    # names, Pinocchio's enums and the default reference ("local", as Pinocchio's getters)
    f = frames[-1]
    name = model.frames[f].name
    np.testing.assert_array_equal(rbd.frame_velocity(model, q, v, name, pin.LOCAL),
                                  rbd.frame_velocity(model, q, v, f))
    np.testing.assert_array_equal(rbd.frame_velocity(model, q, v, name, "WORLD"),
                                  rbd.frame_velocity(model, q, v, f, "world"))


def _cross_cols(x, Y):
    """x (3,) cross every column of Y (3, n)."""
    return np.cross(x, Y, axis=0)


def _true_q_derivatives(model, q, v, a, f, ref, dv_dq, da_dq):
    """The q derivatives of the returned velocity and acceleration from the getters' (in
    LOCAL_WORLD_ALIGNED the origin moves: + w x dp/dq, dw/dt x dp/dq)."""
    if ref != "local_world_aligned":
        return dv_dq, da_dq
    dp = rbd.frame_jacobian(model, q, f, ref)[:3]
    w = rbd.frame_velocity(model, q, v, f, ref)[3:]
    dw = rbd.frame_acceleration(model, q, v, a, f, ref)[3:]
    tv, ta = dv_dq.copy(), da_dq.copy()
    tv[:3] += _cross_cols(w, dp)
    ta[:3] += _cross_cols(dw, dp)
    return tv, ta


@pytest.mark.parametrize("key", KEYS)
def test_derivatives_match_pinocchio(key):
    """LOCAL: Pinocchio's getters exactly. WORLD and LOCAL_WORLD_ALIGNED: exactly but for
    da_dq's columns of a multi-dof joint below the root. Classical: the product rule on the
    true spatial derivatives (in LOCAL_WORLD_ALIGNED Pinocchio's plus w x dp/dq, dw/dt x
    dp/dq, dp/dq the linear rows of the frame's LWA Jacobian)."""
    model, pm, frames = case(key)
    q, v, a = _state(model, 2)
    pd = pm.createData()
    pin.computeForwardKinematicsDerivatives(pm, pd, q, v, a)
    skip = _multi_dof_below_root(model)
    for f in frames:
        for ref, pref in PIN_REFS.items():
            vd = rbd.frame_velocity_derivatives(model, q, v, f, ref)
            ad = rbd.frame_acceleration_derivatives(model, q, v, a, f, ref)
            assert isinstance(vd, FrameVelocityDerivatives)
            assert isinstance(ad, FrameAccelerationDerivatives)
            pvq, pvv = (np.array(x) for x in pin.getFrameVelocityDerivatives(pm, pd, f, pref))
            paq_v, paq, pav, paa = (np.array(x) for x in
                                    pin.getFrameAccelerationDerivatives(pm, pd, f, pref))
            tvq, taq = _true_q_derivatives(model, q, v, a, f, ref, paq_v, paq)
            cols = ~skip if ref != "local" else np.ones(model.nv, bool)
            for x, r in ((vd.dv_dq, pvq), (vd.dv_dv, pvv), (ad.dv_dq, paq_v),
                         (ad.da_dv, pav), (ad.da_da, paa)):
                assert x.shape == (6, model.nv)
                assert rel_err(x, r) < TOL
            assert rel_err(ad.da_dq[:, cols], paq[:, cols]) < TOL
            # classical: Crocoddyl's product rule on Pinocchio's spatial derivatives
            cd = rbd.frame_acceleration_derivatives(model, q, v, a, f, ref, classical=True)
            vel = rbd.frame_velocity(model, q, v, f, ref)
            for x, dacc, dvel in ((cd.da_dq, taq, tvq), (cd.da_dv, pav, pvv)):
                r = dacc.copy()
                r[:3] += _cross_cols(vel[3:], dvel[:3]) - _cross_cols(vel[:3], dvel[3:])
                assert rel_err(x[:, cols], r[:, cols]) < TOL
            np.testing.assert_array_equal(cd.dv_dq, ad.dv_dq)
            np.testing.assert_array_equal(cd.da_da, ad.da_da)


def _complex_step(fn, model, q, v, a, h=1e-20):
    """d fn(q, v, a) / d(q (tangent), v, a) by complex step: three (*fn.shape, nv)."""
    qc = q.astype(complex)
    cols = ([], [], [])
    for k in range(model.nv):
        e = np.zeros(model.nv)
        e[k] = h
        cols[0].append(fn(rbd.integrate(model, qc, 1j * e), v + 0j, a + 0j).imag / h)
        cols[1].append(fn(qc, v + 1j * e, a + 0j).imag / h)
        cols[2].append(fn(qc, v + 0j, a + 1j * e).imag / h)
    return tuple(np.stack(c, axis=-1) for c in cols)


@pytest.mark.parametrize("key", [0, 1, 2, 3, "solo12"])
def test_derivatives_complex_step(key):
    """Every column, every reference, spatial and classical, against the complex step of
    rbdiff's complex128 frame_velocity and frame_acceleration on the manifold."""
    model, _, frames = case(key)
    q, v, a = _state(model, 3)
    for f in frames[-2:]:
        for ref in PIN_REFS:
            vel = _complex_step(lambda qq, vv, aa, f=f, ref=ref:
                                rbd.frame_velocity(model, qq, vv, f, ref), model, q, v, a)
            vd = rbd.frame_velocity_derivatives(model, q, v, f, ref)
            ad = rbd.frame_acceleration_derivatives(model, q, v, a, f, ref)
            tvq, taq = _true_q_derivatives(model, q, v, a, f, ref, vd.dv_dq, ad.da_dq)
            assert rel_err(tvq, vel[0]) < 1e-12
            assert rel_err(vd.dv_dv, vel[1]) < 1e-12
            for classical in (False, True):
                acc = _complex_step(lambda qq, vv, aa, f=f, ref=ref, c=classical:
                                    rbd.frame_acceleration(model, qq, vv, aa, f, ref, c),
                                    model, q, v, a)
                ad = rbd.frame_acceleration_derivatives(model, q, v, a, f, ref, classical)
                np.testing.assert_array_equal(ad.dv_dq, vd.dv_dq)
                got = ad[1:] if classical else (taq,) + tuple(ad[2:])
                for x, r in zip(got, acc):
                    assert rel_err(x, r) < 1e-12, (ref, classical)


@pytest.mark.parametrize("key", [0, 1, "talos_full_v2"])
def test_time_variation(key):
    """dJ/dt against the complex step of frame_jacobian along q(t) = q (+) t v, and the
    identity dJ v + J a = the frame's acceleration (classical in LOCAL_WORLD_ALIGNED)."""
    model, _, frames = case(key)
    q, v, a = _state(model, 4)
    h = 1e-20
    qt = rbd.integrate(model, q.astype(complex), 1j * h * v)
    for f in frames[-2:]:
        for ref in PIN_REFS:
            dJ = rbd.frame_jacobian_time_variation(model, q, v, f, ref)
            assert rel_err(dJ, rbd.frame_jacobian(model, qt, f, ref).imag / h) < 1e-12
            J = rbd.frame_jacobian(model, q, f, ref)
            acc = rbd.frame_acceleration(model, q, v, a, f, ref,
                                         classical=ref == "local_world_aligned")
            assert rel_err(dJ @ v + J @ a, acc) < 1e-12


def _calls(model, q, v, a, f, ref):
    """Every function on (q, v, a), as a tuple of arrays."""
    return (rbd.frame_velocity(model, q, v, f, ref),
            rbd.frame_acceleration(model, q, v, a, f, ref),
            rbd.frame_acceleration(model, q, v, a, f, ref, classical=True),
            rbd.frame_jacobian_time_variation(model, q, v, f, ref),
            *rbd.frame_velocity_derivatives(model, q, v, f, ref),
            *rbd.frame_acceleration_derivatives(model, q, v, a, f, ref),
            *rbd.frame_acceleration_derivatives(model, q, v, a, f, ref, classical=True))


@pytest.mark.parametrize("key", [1, "solo12"])
def test_batch_equals_loop(key):
    model, _, frames = case(key)
    states = [_state(model, 10 + b) for b in range(3)]
    q, v, a = (np.stack([s[k] for s in states]) for k in range(3))
    f = frames[-1]
    for ref in PIN_REFS:
        with policy.forced("serial"):
            batch = _calls(model, q, v, a, f, ref)
        for b in range(3):
            for x, y in zip(batch, _calls(model, q[b], v[b], a[b], f, ref)):
                assert x.shape == (3,) + y.shape
                np.testing.assert_array_equal(x[b], y)
    with policy.forced("parallel"):   # chunks in a prange: the same bits
        dv = rbd.frame_acceleration_derivatives(model, q, v, a, f, "local", classical=True)
    for b in range(3):
        one = rbd.frame_acceleration_derivatives(model, q[b], v[b], a[b], f, "local", True)
        for x, y in zip(dv, one):
            np.testing.assert_array_equal(x[b], y)


def test_float32():
    model, _, frames = case(3)
    q, v, a = _state(model, 5)
    f = frames[-1]
    for ref in PIN_REFS:
        ref64 = _calls(model, q, v, a, f, ref)
        got = _calls(model, q.astype(np.float32), v.astype(np.float32),
                     a.astype(np.float32), f, ref)
        for x, r in zip(got, ref64):
            assert x.dtype == np.float32
            assert rel_err(x, r) < 5e-5


def test_bad_input_explained():
    model = case("solo12")[0]
    q, v, a = _state(model, 6)
    with pytest.raises(KeyError, match="no frame named 'FL_FOT'.*FL_FOOT"):
        rbd.frame_velocity(model, q, v, "FL_FOT")
    with pytest.raises(IndexError, match="frame: index 1000 out of range"):
        rbd.frame_acceleration_derivatives(model, q, v, a, 1000)
    with pytest.raises(ValueError, match="v contains NaN or Inf at index \\(3,\\)"):
        bad = v.copy()
        bad[3] = np.nan
        rbd.frame_velocity_derivatives(model, q, bad, "FL_FOOT")
    with pytest.raises(ValueError, match="a: expected shape"):
        rbd.frame_acceleration(model, q, v, a[:-1], "FL_FOOT")
    with pytest.raises(ValueError, match="reference.*got 'body'"):
        rbd.frame_jacobian_time_variation(model, q, v, "FL_FOOT", "body")
    with pytest.raises(ValueError, match="quaternion"):
        qb = q.copy()
        qb[3:7] *= 2
        rbd.frame_acceleration(model, qb, v, a, "FL_FOOT")
