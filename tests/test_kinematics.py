"""Forward kinematics, frame placements, frame Jacobians, gravity and nonlinear effects
(kernels/frames.py, kernels/rnea.py) against Pinocchio on every robot and random tree of
conftest's ``pair``; the fast paths against the general path; float32 and complex128;
bad input."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from conftest import _TREES, random_state, rel_err
from rbdiff.cpu.scratch import HELD
from pin_bridge import frame_rotations

PIN_REFS = {"local": pin.LOCAL, "world": pin.WORLD,
            "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
_TWINS = {}


def _rotations(model):
    """Pinocchio's joint frame = rbdiff's rotated by Ra (identity but for the continuous
    joints of bridged random trees, see pin_bridge)."""
    return frame_rotations(model) if id(model) in _TREES else \
        [np.eye(3)] * model.njoints


def _twin(model, pm):
    """A Pinocchio model with rbdiff's frames, index for index: a real robot's are
    already (test_frames.py); a bridged random tree's are added, their placements
    re-expressed in Pinocchio's joint frames."""
    if len(pm.frames) == len(model.frames):
        return pm
    if id(model) not in _TWINS:
        assert len(pm.frames) == 1
        Ra = _rotations(model)
        twin = pin.Model(pm)
        for f in model.frames[1:]:
            R, p = Ra[f.parent].T @ f.placement[:3, :3], Ra[f.parent].T @ f.placement[:3, 3]
            twin.addFrame(pin.Frame(f.name, f.parent, f.parent_frame, pin.SE3(R, p),
                                    pin.FrameType.values[int(f.type)]))
        assert [f.name for f in twin.frames] == [f.name for f in model.frames]
        _TWINS[id(model)] = twin
    return _TWINS[id(model)]


def _homogeneous(R):
    T = np.eye(4)
    T[:3, :3] = R
    return T


def test_forward_kinematics_matches_pinocchio(pair):
    """oMi, local v_i and a_i (gravity excluded) of every joint as Pinocchio's data.oMi,
    data.v, data.a; the q-only and (q, v) calls give the same placements and velocities
    bit for bit, and a without v is a with v = 0."""
    model, pm = pair
    pd = pm.createData()
    q, v, a = random_state(pm, np.random.default_rng(0))
    kin = rbd.forward_kinematics(model, q, v, a)
    n = model.njoints - 1
    assert kin.placements.shape == (n + 1, 4, 4)
    assert kin.velocities.shape == kin.accelerations.shape == (n + 1, 6)
    pin.forwardKinematics(pm, pd, q, v, a)
    Ra = _rotations(model)
    for i in range(n + 1):
        np.testing.assert_allclose(kin.placements[i] @ _homogeneous(Ra[i]),
                                   pd.oMi[i].homogeneous, atol=1e-12, rtol=0)
        for got, ref in ((kin.velocities[i], pd.v[i]), (kin.accelerations[i], pd.a[i])):
            local = np.concatenate([Ra[i].T @ got[:3], Ra[i].T @ got[3:]])
            assert rel_err(local, ref.vector) < 1e-11, i
    only_q = rbd.forward_kinematics(model, q)
    assert only_q.velocities is None and only_q.accelerations is None
    np.testing.assert_array_equal(only_q.placements, kin.placements)
    with_v = rbd.forward_kinematics(model, q, v)
    assert with_v.accelerations is None
    np.testing.assert_array_equal(with_v.velocities, kin.velocities)
    only_a = rbd.forward_kinematics(model, q, a=a)
    assert only_a.velocities is None
    np.testing.assert_array_equal(only_a.accelerations,
                                  rbd.forward_kinematics(model, q, 0 * v, a).accelerations)


def test_frame_placements_match_pinocchio(pair):
    """oMf of every frame; frame_placement of each (by index and by name) is the same
    bit for bit, and a joint frame's is the joint's placement."""
    model, pm = pair
    pm = _twin(model, pm)
    pd = pm.createData()
    q, _, _ = random_state(pm, np.random.default_rng(1))
    pin.framesForwardKinematics(pm, pd, q)
    T = rbd.frame_placements(model, q)
    assert T.shape == (len(model.frames), 4, 4)
    oMi = rbd.forward_kinematics(model, q).placements
    for k, f in enumerate(model.frames):
        np.testing.assert_allclose(T[k], pd.oMf[k].homogeneous, atol=1e-12, rtol=0,
                                   err_msg=f.name)
        np.testing.assert_array_equal(rbd.frame_placement(model, q, k), T[k])
        np.testing.assert_array_equal(rbd.frame_placement(model, q, f.name),
                                      T[model.get_frame_id(f.name)])
        if f.type == rbd.FrameType.JOINT:
            np.testing.assert_array_equal(T[k], oMi[f.parent])


def test_identity_frames_and_older_pickles():
    """A frame whose placement in its joint is the identity is flagged (FM_ID) and placed
    at its joint's placement; the others at the product oMi iMf. A model pickled with the
    older frame table (no FM_ID column) gets the table again when unpickled."""
    import pickle
    from rbdiff.model.layout import FM_ID, FM_WIDTH
    model = rbd.load_robot("solo12")
    q = rbd.random_configuration(model, np.random.default_rng(3))
    T = rbd.frame_placements(model, q)
    oMi = rbd.forward_kinematics(model, q).placements
    flags = model.frame_mf[:, FM_ID]
    assert 0 < flags.sum() < len(model.frames)          # both kinds on solo12
    for k, f in enumerate(model.frames):
        identity = np.array_equal(np.asarray(f.placement)[:3], np.eye(3, 4))
        assert flags[k] == float(identity), f.name
        if identity:
            np.testing.assert_array_equal(T[k], oMi[f.parent], err_msg=f.name)
        else:
            np.testing.assert_allclose(T[k], oMi[f.parent] @ np.asarray(f.placement),
                                       atol=1e-14, rtol=0, err_msg=f.name)
    state = model.__getstate__()
    state["frame_mf"] = state["frame_mf"][:, :FM_WIDTH - 1]
    old = pickle.loads(pickle.dumps(model))
    old.__setstate__(state)
    assert old.frame_mf.shape == (len(model.frames), FM_WIDTH)
    assert not old.frame_mf.flags.writeable
    np.testing.assert_array_equal(rbd.frame_placements(old, q), T)


def _frames_to_check(model):
    """Frame 0, the deepest frame of each type present, and a few more."""
    depth = [0] * model.njoints
    for i in range(1, model.njoints):
        depth[i] = depth[model.parents[i]] + 1
    picked = {0, len(model.frames) - 1}
    for t in rbd.FrameType:
        of_type = [k for k, f in enumerate(model.frames) if f.type == t and k > 0]
        if of_type:
            picked.add(max(of_type, key=lambda k: depth[model.frames[k].parent]))
    picked.update(range(1, len(model.frames), max(1, len(model.frames) // 4)))
    return sorted(picked)


@pytest.mark.parametrize("reference", list(PIN_REFS))
def test_frame_jacobians_match_pinocchio(pair, reference):
    """computeFrameJacobian (kinematics included) of JOINT, FIXED_JOINT and BODY frames
    and the universe, in every reference; by name and by index alike."""
    model, pm = pair
    pm = _twin(model, pm)
    q, _, _ = random_state(pm, np.random.default_rng(2))
    for k in _frames_to_check(model):
        J = rbd.frame_jacobian(model, q, k, reference)
        assert J.shape == (6, model.nv)
        Jp = pin.computeFrameJacobian(pm, pm.createData(), q, k, PIN_REFS[reference])
        np.testing.assert_allclose(J, Jp, atol=1e-11 * max(1.0, np.abs(Jp).max()), rtol=0,
                                   err_msg=f"{model.frames[k].name} {reference}")
        if model.get_frame_id(model.frames[k].name) == k:
            np.testing.assert_array_equal(
                rbd.frame_jacobian(model, q, model.frames[k].name, reference), J)


def test_gravity_and_nonlinear_effects(pair):
    """computeGeneralizedGravity and nonLinearEffects; equal to rnea(q, 0, 0) and
    rnea(q, v, 0) (the passes leave out terms that are exactly zero)."""
    model, pm = pair
    pd = pm.createData()
    q, v, _ = random_state(pm, np.random.default_rng(3))
    g = rbd.gravity(model, q)
    h = rbd.nonlinear_effects(model, q, v)
    assert rel_err(g, pin.computeGeneralizedGravity(pm, pd, q)) < 1e-12
    assert rel_err(h, pin.nonLinearEffects(pm, pd, q, v)) < 1e-12
    z = np.zeros(model.nv)
    np.testing.assert_array_equal(g, rbd.rnea(model, q, z, z))
    np.testing.assert_array_equal(h, rbd.rnea(model, q, v, z))


def test_fast_and_general_paths_agree(pair):
    """float64 1-D arrays take the fast paths; lists take the general path: the same
    kernels, so the same bits."""
    model, pm = pair
    q, v, a = random_state(pm, np.random.default_rng(4))
    ql, vl, al = q.tolist(), v.tolist(), a.tolist()
    for x, y in zip(rbd.forward_kinematics(model, q, v, a),
                    rbd.forward_kinematics(model, ql, vl, al)):
        np.testing.assert_array_equal(x, y)
    f = len(model.frames) - 1
    np.testing.assert_array_equal(rbd.frame_placements(model, q),
                                  rbd.frame_placements(model, ql))
    np.testing.assert_array_equal(rbd.frame_placement(model, q, f),
                                  rbd.frame_placement(model, ql, f))
    for ref in PIN_REFS:
        np.testing.assert_array_equal(rbd.frame_jacobian(model, q, f, ref),
                                      rbd.frame_jacobian(model, ql, f, ref))
        for x, y in zip(rbd.kinematics_derivatives(model, q, v, a, ref),
                        rbd.kinematics_derivatives(model, ql, vl, al, ref)):
            np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(rbd.gravity(model, q), rbd.gravity(model, ql))
    np.testing.assert_array_equal(rbd.nonlinear_effects(model, q, v),
                                  rbd.nonlinear_effects(model, ql, vl))
    np.testing.assert_array_equal(rbd.frame_placement(model, q, -1),
                                  rbd.frame_placement(model, q, f))


def _all(model, q, v, a, frame):
    """Every function of this module on one state, as a list of arrays."""
    out = list(rbd.forward_kinematics(model, q, v, a))
    out += [rbd.frame_placements(model, q), rbd.frame_placement(model, q, frame)]
    out += [rbd.frame_jacobian(model, q, frame, ref) for ref in PIN_REFS]
    out += [rbd.gravity(model, q), rbd.nonlinear_effects(model, q, v)]
    return out


@pytest.mark.parametrize("name", ["iiwa14", "tree"])
@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_other_dtypes(name, dtype):
    """float32 and complex128 inputs compute in their type (float32: the model's float32
    copy) and agree with float64."""
    model = rbd.load_robot("iiwa14") if name == "iiwa14" else \
        rbd.models.random_tree(9, 5, floating_base=True)
    rng = np.random.default_rng(5)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    frame = model.frames[-1].name
    ref = _all(model, q, v, a, frame)
    got = _all(model, q.astype(dtype), v.astype(dtype), a.astype(dtype), frame)
    tol = 1e-4 if dtype == np.float32 else 1e-13
    for x, r in zip(got, ref):
        assert x.dtype == dtype and x.shape == r.shape
        assert rel_err(x, r) < tol


def test_complex_step_of_frame_placement_is_the_jacobian():
    """d oMf / dq_k by complex step = the LOCAL_WORLD_ALIGNED Jacobian's column k (all
    revolute: q is the tangent space): placements and Jacobians agree with each other."""
    model = rbd.load_robot("iiwa14")
    q = rbd.random_configuration(model, np.random.default_rng(6))
    frame = model.frames[-1].name
    J = rbd.frame_jacobian(model, q, frame, "local_world_aligned")
    R = rbd.frame_placement(model, q, frame)[:3, :3]
    for k in range(model.nv):
        qc = q.astype(complex)
        qc[k] += 1e-30j
        dT = rbd.frame_placement(model, qc, frame).imag / 1e-30
        np.testing.assert_allclose(dT[:3, 3], J[:3, k], atol=1e-12)
        W = dT[:3, :3] @ R.T      # [w]x
        np.testing.assert_allclose([W[2, 1], W[0, 2], W[1, 0]], J[3:, k], atol=1e-12)


def test_bad_input_is_named():
    model = rbd.load_robot("iiwa14")
    q = rbd.neutral(model)
    v = np.zeros(model.nv)
    bad = q.copy()
    bad[2] = np.nan
    for call in (lambda x: rbd.forward_kinematics(model, x),
                 lambda x: rbd.forward_kinematics(model, x, v, v),
                 lambda x: rbd.frame_placements(model, x),
                 lambda x: rbd.frame_placement(model, x, 3),
                 lambda x: rbd.frame_jacobian(model, x, 3, "world"),
                 lambda x: rbd.gravity(model, x),
                 lambda x: rbd.nonlinear_effects(model, x, v),
                 lambda x: rbd.kinematics_derivatives(model, x, v, v)):
        with pytest.raises(ValueError, match=r"q contains NaN or Inf at index \(2,\)"):
            call(bad)
        with pytest.raises(ValueError, match=r"q: expected shape \(7,\) or \(B, 7\)"):
            call(q[:5])
    badv = v.copy()
    badv[1] = np.inf
    with pytest.raises(ValueError, match=r"v contains NaN or Inf at index \(1,\)"):
        rbd.forward_kinematics(model, q, badv)
    with pytest.raises(ValueError, match=r"a contains NaN or Inf"):
        rbd.forward_kinematics(model, q, v, badv)
    with pytest.raises(ValueError, match=r"v contains NaN or Inf"):
        rbd.nonlinear_effects(model, q, badv)
    with pytest.raises(ValueError, match=r"v: expected shape"):
        rbd.nonlinear_effects(model, q, v[:3])
    last = model.frames[-1].name
    with pytest.raises(KeyError, match="no frame named 'nope'"):
        rbd.frame_jacobian(model, q, "nope")
    with pytest.raises(KeyError, match="no frame named '3'"):     # a name, not an index
        rbd.frame_placement(model, q, "3")
    with pytest.raises(IndexError, match="index 99 out of range"):
        rbd.frame_placement(model, q, 99)
    with pytest.raises(TypeError, match="frame: expected a frame name or an index"):
        rbd.frame_jacobian(model, q, 2.5)
    for reference in ("body", None, 0):
        with pytest.raises(ValueError, match="reference: expected one of"):
            rbd.frame_jacobian(model, q, last, reference)
    with pytest.raises(ValueError, match="reference: expected one of"):
        rbd.kinematics_derivatives(model, q, v, v, "body")
    quat = rbd.load_robot("iiwa14", floating_base=True)
    qq = rbd.neutral(quat)
    qq[3:7] = [0.0, 0.0, 0.0, 2.0]
    with pytest.raises(ValueError, match="quaternion of joint 'root_joint'"):
        rbd.frame_jacobian(quat, qq, quat.frames[-1].name)


def test_fast_entries_take_only_float64_vectors():
    """forward_kinematics (q, v, a given) and frame_jacobian pass q (v, a) unchecked to
    entries that accept only float64 1-D ndarrays (kernels.fastargs); anything else,
    strided views included, goes to the general path and gives the same answer."""
    from rbdiff.cpu import single as cs
    from rbdiff.kernels import fastargs
    from rbdiff.kernels.jit import native_ref
    model = rbd.load_robot("iiwa14")
    rng = np.random.default_rng(5)
    q, v, a = (rng.normal(size=model.nv) for _ in range(3))
    f = len(model.frames) - 1
    fk = rbd.forward_kinematics(model, q, v, a)
    J = rbd.frame_jacobian(model, q, f, "world")
    strided = np.repeat(q, 2)[::2]
    for x in (strided, list(q), q.astype(">f8")):
        got = rbd.forward_kinematics(model, x, v, a)
        for y, z in zip(got, fk):
            np.testing.assert_array_equal(np.squeeze(y), z)
        np.testing.assert_array_equal(np.squeeze(rbd.frame_jacobian(model, x, f, "world")),
                                      J)
    for bad in (q.astype(np.float32), q.astype(np.int64), q[None]):   # other types
        assert np.asarray(rbd.frame_jacobian(model, bad, f, "world")).shape[-2:] == J.shape
    out = [np.empty(model._sT), np.empty(model._sm), np.empty(model._sm)]
    Jo = np.empty(model._sJ)
    ws = HELD[model._scratch_key]
    # the entries as the fast paths bind them (REF where fastargs is AVAILABLE), and the
    # Python-checked stand-ins used elsewhere (jit.native_ref(available=False))
    routes = [False] + ([True] if fastargs.AVAILABLE else [])
    for available in routes:
        box = [None, None]      # where they rebind themselves after their first call
        fk_fast = native_ref(cs.forward_kinematics_one, 0, box, (2, 3, 4),
                             available=available)
        jac_fast = native_ref(cs.frame_jacobian_one, 1, box, (4,), available=available)
        for bad in (q.astype(np.int64), q[None], q.astype(np.float32), list(q),
                    np.asmatrix(q), q.astype(">f8"), None, 3.0):
            assert fk_fast(model.mi, model.mf, bad, v, a, ws, *out, None) is False
            assert fk_fast(model.mi, model.mf, q, bad, a, ws, *out, None) is False
            assert fk_fast(model.mi, model.mf, q, v, bad, ws, *out, None) is False
            assert jac_fast(model.mi, model.mf, model.frame_parents, model.frame_mf, bad, f,
                            0, ws, Jo) is False
        assert fk_fast(model.mi, model.mf, strided, v, a, ws, *out, None) is True
        for y, z in zip(out, fk):
            np.testing.assert_array_equal(y, z)
        assert jac_fast(model.mi, model.mf, model.frame_parents, model.frame_mf, strided, f,
                        0, ws, Jo) is True
        np.testing.assert_array_equal(Jo, J)
