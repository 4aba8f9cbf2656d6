"""rbd.kinematics_derivatives (kernels/kinematics_derivatives.py) against Pinocchio's
computeForwardKinematicsDerivatives + getJointVelocityDerivatives /
getJointAccelerationDerivatives in WORLD, LOCAL and LOCAL_WORLD_ALIGNED, against complex
step through rbdiff's own forward kinematics, and against central differences of
Pinocchio's forwardKinematics where Pinocchio's getter and its own kinematics disagree."""

import pickle

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from conftest import _TREES, random_state, rel_err
from pin_bridge import frame_rotations
from rbdiff.results import KinematicsDerivatives

PIN_FRAMES = {"world": pin.WORLD, "local": pin.LOCAL,
              "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
NAMES = KinematicsDerivatives._fields


def _pin_getters(pm, q, v, a, rf):
    """(5, njoints, 6, nv): dv_dq, dv_dv, da_dq, da_dv, da_da from Pinocchio."""
    d = pm.createData()
    pin.computeForwardKinematicsDerivatives(pm, d, q, v, a)
    out = np.zeros((5, pm.njoints, 6, pm.nv))     # row 0, the universe, zero as ours
    for i in range(1, pm.njoints):
        dvq, dvv = (np.array(x) for x in pin.getJointVelocityDerivatives(pm, d, i, rf))
        _, daq, dav, daa = (np.array(x) for x in
                            pin.getJointAccelerationDerivatives(pm, d, i, rf))
        out[:, i] = dvq, dvv, daq, dav, daa
    return out


def _to_pin_local(model, x):
    """Bridged random trees put a continuous joint's frame in a rotated frame (pin_bridge):
    express LOCAL rows in Pinocchio's joint frames."""
    if id(model) not in _TREES:
        return x
    Ra = frame_rotations(model)
    out = x.copy()
    for i in range(1, model.njoints):
        out[..., i, :3, :] = Ra[i].T @ x[..., i, :3, :]
        out[..., i, 3:, :] = Ra[i].T @ x[..., i, 3:, :]
    return out


def _multi_dof_below_root(model):
    """Columns of spherical / free-flyer joints that have a parent: there Pinocchio's
    WORLD and LOCAL_WORLD_ALIGNED da_dq use v_j x S where (v_parent x S) belongs."""
    cols = np.zeros(model.nv, bool)
    for i in range(1, model.njoints):
        if model.nvs[i] > 1 and model.parents[i] > 0:
            cols[model.idx_v[i]:model.idx_v[i] + model.nvs[i]] = True
    return cols


@pytest.mark.parametrize("reference", list(PIN_FRAMES))
def test_matches_pinocchio(pair, reference):
    model, pm = pair
    q, v, a = random_state(pm, np.random.default_rng(61))
    got = rbd.kinematics_derivatives(model, q, v, a, reference=reference)
    assert isinstance(got, KinematicsDerivatives)
    ref = _pin_getters(pm, q, v, a, PIN_FRAMES[reference])
    skip = _multi_dof_below_root(model) if reference != "local" else np.zeros(model.nv, bool)
    for k, (x, r) in enumerate(zip(got, ref)):
        assert x.shape == (model.njoints, 6, model.nv)
        if reference == "local":
            x = _to_pin_local(model, x)
        if NAMES[k] == "da_dq":
            x, r = x[..., ~skip], r[..., ~skip]
        assert rel_err(x, r) < 1e-9, NAMES[k]


def test_da_dq_against_pinocchio_forward_kinematics(pair):
    """Every da_dq column, those Pinocchio's getter gets wrong included, against central
    differences (on the manifold) of Pinocchio's own forwardKinematics: oMi.act(a_i)."""
    model, pm = pair
    q, v, a = random_state(pm, np.random.default_rng(62))
    d = pm.createData()

    def oa(qq):
        pin.forwardKinematics(pm, d, qq, v, a)
        return np.array([d.oMi[i].act(d.a[i]).vector for i in range(pm.njoints)])

    h = 1e-6
    fd = np.zeros((pm.njoints, 6, pm.nv))
    for k in range(pm.nv):
        e = np.zeros(pm.nv)
        e[k] = h
        fd[:, :, k] = (oa(pin.integrate(pm, q, e)) - oa(pin.integrate(pm, q, -e))) / (2 * h)
    got = rbd.kinematics_derivatives(model, q, v, a).da_dq
    assert rel_err(got, fd) < 1e-7
    skip = _multi_dof_below_root(model)
    if skip.any():   # the getter's discrepancy is real, and not ours
        pins = _pin_getters(pm, q, v, a, pin.WORLD)[2]
        assert rel_err(pins[..., skip], fd[..., skip]) > 1e-3


def _at_world_origin(kin):
    """Velocities and accelerations of joints 0..n from forward_kinematics (local frames)
    at the world origin in world axes: X_i m."""
    R, p = kin.placements[:, :3, :3], kin.placements[:, :3, 3]

    def act(m):
        w = np.einsum("nij,nj->ni", R, m[:, 3:])
        return np.concatenate([np.einsum("nij,nj->ni", R, m[:, :3]) + np.cross(p, w), w],
                              axis=1)
    return act(kin.velocities), act(kin.accelerations)


def _complex_step(model, q, v, a, reference):
    """(5, njoints, 6, nv) by complex step through rbdiff's forward kinematics (complex128):
    q stepped as integrate(q, i h e_k), v and a as v + i h e_k."""
    n, nv, h = model.njoints, model.nv, 1e-20
    p_real = rbd.forward_kinematics(model, q).placements[:, :3, 3]

    def motions(qq, vv, aa):
        fk = rbd.forward_kinematics(model, qq, vv, aa)
        if reference == "local":
            return fk.velocities, fk.accelerations
        vw, aw = _at_world_origin(fk)
        if reference == "local_world_aligned":   # at joint i's origin, held fixed
            vw[:, :3] += np.cross(vw[:, 3:], p_real)
            aw[:, :3] += np.cross(aw[:, 3:], p_real)
        return vw, aw

    out = np.zeros((5, n, 6, nv))
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = h
        vq, aq = motions(rbd.integrate(model, q.astype(complex), 1j * e), v, a)
        vv, av = motions(q.astype(complex), v + 1j * e, a)
        _, aa = motions(q.astype(complex), v, a + 1j * e)
        out[0, :, :, k], out[1, :, :, k] = vq.imag / h, vv.imag / h
        out[2, :, :, k], out[3, :, :, k], out[4, :, :, k] = aq.imag / h, av.imag / h, aa.imag / h
    return out


@pytest.mark.parametrize("reference", list(PIN_FRAMES))
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_complex_step(seed, reference):
    model = rbd.models.random_tree(10, seed, floating_base=seed % 2 == 0)
    rng = np.random.default_rng(seed)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    got = rbd.kinematics_derivatives(model, q, v, a, reference=reference)
    ref = _complex_step(model, q, v, a, reference)
    for k, (x, r) in enumerate(zip(got, ref)):
        assert rel_err(x, r) < 1e-12, NAMES[k]


def test_motion_sets_are_the_chain_rule_ones():
    """Sec. III-D: the world-frame derivatives are the motion sets of the RNEA chain-rule
    forward pass (its NumPy reference, test_rnea_chain_rule)."""
    from test_rnea_chain_rule import chain_rule_reference
    model = rbd.models.random_tree(10, 5, floating_base=True)
    rng = np.random.default_rng(5)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    _, _, dV, dA, dAv = chain_rule_reference(model, q, v, a)
    got = rbd.kinematics_derivatives(model, q, v, a)
    for x, r in ((got.dv_dq, dV), (got.da_dq, dA), (got.da_dv, dAv)):
        assert rel_err(x, np.transpose(r, (0, 2, 1))) < 1e-12     # row 0: zeros in both


def test_float32():
    model = rbd.models.random_tree(10, 2, floating_base=True)
    rng = np.random.default_rng(7)
    q = rbd.random_configuration(model, rng).astype(np.float32)
    v, a = rng.normal(size=(2, model.nv)).astype(np.float32)
    for reference in PIN_FRAMES:
        ref = rbd.kinematics_derivatives(model, q.astype(float), v.astype(float),
                                         a.astype(float), reference)
        got = rbd.kinematics_derivatives(model, q, v, a, reference)
        for x, r in zip(got, ref):
            assert x.dtype == np.float32
            assert rel_err(x, r) < 2e-5


def test_batch_equals_loop(pair):
    model, pm = pair
    rng = np.random.default_rng(63)
    states = [random_state(pm, rng) for _ in range(3)]
    q, v, a = (np.stack([s[k] for s in states]) for k in range(3))
    for reference in PIN_FRAMES:
        batch = rbd.kinematics_derivatives(model, q, v, a, reference)
        for b in range(3):
            one = rbd.kinematics_derivatives(model, q[b], v[b], a[b], reference)
            for x, y in zip(batch, one):
                assert x.shape == (3, model.njoints, 6, model.nv)
                np.testing.assert_array_equal(x[b], y)


def test_bad_input_explained():
    model = rbd.models.random_tree(6, 1, floating_base=True)
    z = np.zeros(model.nv)
    with pytest.raises(ValueError, match="reference.*'world'.*got 'body'"):
        rbd.kinematics_derivatives(model, rbd.neutral(model), z, z, reference="body")
    q = rbd.neutral(model)
    q[3:7] = [1.0, 1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="quaternion"):
        rbd.kinematics_derivatives(model, q, z, z)
    with pytest.raises(ValueError, match="a contains NaN"):
        rbd.kinematics_derivatives(model, rbd.neutral(model), z, np.full(model.nv, np.nan))
    with pytest.raises(ValueError, match="shape"):
        rbd.kinematics_derivatives(model, rbd.neutral(model), z[:-1], z)


@pytest.mark.parametrize("reference", list(PIN_FRAMES))
def test_one_joint_matches_pinocchio_and_the_full_result(pair, reference):
    """joint=: Pinocchio's getters for that joint alone (same columns as the full test),
    and the full result's row bit for bit, for every joint (by index and by name)."""
    model, pm = pair
    q, v, a = random_state(pm, np.random.default_rng(64))
    full = rbd.kinematics_derivatives(model, q, v, a, reference=reference)
    ref = _pin_getters(pm, q, v, a, PIN_FRAMES[reference])
    skip = _multi_dof_below_root(model) if reference != "local" else np.zeros(model.nv, bool)
    for j in range(1, model.njoints):
        got = rbd.kinematics_derivatives(model, q, v, a, reference, joint=j)
        by_name = rbd.kinematics_derivatives(model, q, v, a, reference,
                                             joint=model.names[j])
        for k, (x, f, r, y) in enumerate(zip(got, full, ref, by_name)):
            assert x.shape == (6, model.nv)
            np.testing.assert_array_equal(x, y)
            np.testing.assert_array_equal(x, f[j])      # the same closed forms
            if reference == "local":        # as row j of a full result
                x = _to_pin_local(model, np.broadcast_to(x, full[0].shape))[j]
            if NAMES[k] == "da_dq":
                x, r = x[:, ~skip], r[..., ~skip]
            assert rel_err(x, r[j]) < 1e-9, (j, NAMES[k])


@pytest.mark.parametrize("reference", list(PIN_FRAMES))
def test_pending_result_reads_as_pinocchio_getters(reference):
    """A single call returns the kinematics state (Pinocchio's compute); joint(i) before
    any field is read, the fields, and joint(i) after equal the joint= call bit for bit,
    and a later call on another state does not change what an earlier result reads."""
    model = rbd.models.random_tree(12, 3, floating_base=True)
    rng = np.random.default_rng(66)
    states = [(rbd.random_configuration(model, rng), *rng.normal(size=(2, model.nv)))
              for _ in range(2)]
    first = rbd.kinematics_derivatives(model, *states[0], reference)
    assert "kinematics state" in repr(first)
    before = [first.joint(j) for j in range(1, model.njoints)]
    rbd.kinematics_derivatives(model, *states[1], reference).dv_dq    # reuses no state
    for j, got in enumerate(before, start=1):
        want = rbd.kinematics_derivatives(model, *states[0], reference, joint=j)
        assert isinstance(got, KinematicsDerivatives)
        for x, y, f in zip(got, want, first):          # iterating writes the fields
            assert x.shape == (6, model.nv)
            np.testing.assert_array_equal(x, y)
            np.testing.assert_array_equal(f[j], y)
        for x, y in zip(first.joint(j), want):
            np.testing.assert_array_equal(x, y)
    assert "kinematics state" not in repr(first)
    assert first._asdict().keys() == set(NAMES)
    dv, *_ = rbd.kinematics_derivatives(model, *states[0], reference)   # unpacks
    np.testing.assert_array_equal(dv, first.dv_dq)
    assert all(x is y for x, y in zip(first, first[:]))
    pending = rbd.kinematics_derivatives(model, *states[0], reference)
    for x, y in zip(pickle.loads(pickle.dumps(pending)), first):
        np.testing.assert_array_equal(x, y)
    for bad in (0, model.njoints, True, 1.0, "root"):
        for kd in (rbd.kinematics_derivatives(model, *states[0], reference), first):
            with pytest.raises(IndexError, match=f"an int 1..{model.njoints - 1}"):
                kd.joint(bad)


def test_one_joint_batch_equals_loop_and_float32():
    model = rbd.models.random_tree(9, 2, floating_base=True)
    rng = np.random.default_rng(65)
    q = np.stack([rbd.random_configuration(model, rng) for _ in range(4)])
    v, a = rng.normal(size=(2, 4, model.nv))
    j = model.njoints - 1
    for reference in PIN_FRAMES:
        batch = rbd.kinematics_derivatives(model, q, v, a, reference, joint=j)
        for x, y in zip(rbd.kinematics_derivatives(model, q, v, a, reference).joint(j),
                        batch):                 # a batch's getter: (B, 6, nv) views
            np.testing.assert_array_equal(x, y)
        for b in range(4):
            one = rbd.kinematics_derivatives(model, q[b], v[b], a[b], reference, joint=j)
            for x, y in zip(batch, one):
                assert x.shape == (4, 6, model.nv)
                np.testing.assert_array_equal(x[b], y)
        f32 = rbd.kinematics_derivatives(model, q[0].astype(np.float32),
                                         v[0].astype(np.float32), a[0].astype(np.float32),
                                         reference, joint=j)
        for x, r in zip(f32, batch):
            assert x.dtype == np.float32
            assert rel_err(x, r[0]) < 2e-5


def test_one_joint_bad_joint():
    model = rbd.models.random_tree(5, 1)
    z = np.zeros(model.nv)
    q = rbd.neutral(model)
    with pytest.raises(KeyError, match="no joint named 'elbow'"):
        rbd.kinematics_derivatives(model, q, z, z, joint="elbow")
    for bad in (0, -1, model.njoints):
        with pytest.raises(IndexError, match="out of range 1..5"):
            rbd.kinematics_derivatives(model, q, z, z, joint=bad)
    with pytest.raises(TypeError, match="joint name or an index"):
        rbd.kinematics_derivatives(model, q, z, z, joint=2.5)
    with pytest.raises(ValueError, match="reference"):
        rbd.kinematics_derivatives(model, q, z, z, reference="body", joint=1)
    with pytest.raises(ValueError, match="a contains NaN"):
        rbd.kinematics_derivatives(model, q, z, np.full(model.nv, np.nan), joint=1)
