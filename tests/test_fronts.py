"""cpu/fronts.py and cpu/record.py: the compiled fronts read the model's record and give
the declared path's numbers bit for bit; they decline (the general path then runs, and
names the problem) for what they cannot read: a Model subclass, a model without a record,
an unknown or unhashable frame or reference, arrays of another kind."""

import pickle

import numpy as np
import pytest

import rbdiff as rbd
from conftest import allocated_by
from rbdiff import api, kinematics
from rbdiff.cpu import record
from rbdiff.model.model import Model


@pytest.fixture(scope="module")
def solo():
    return rbd.load_robot("solo12", floating_base=True)


def _state(model, seed=0):
    rng = np.random.default_rng(seed)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    return q, v, a


def _calls(model, q, v, a, frame):
    """name -> a public single call that runs through a front."""
    f = np.random.default_rng(5).normal(size=(model.njoints, 6))
    return {
        "rnea": lambda m: rbd.rnea(m, q, v, a),
        "rnea+fext": lambda m: rbd.rnea(m, q, v, a, f),
        "aba": lambda m: rbd.aba(m, q, v, a),
        "aba+fext": lambda m: rbd.aba(m, q, v, a, fext=f),
        "crba": lambda m: rbd.crba(m, q),
        "minverse": lambda m: rbd.minverse(m, q),
        "gravity": lambda m: rbd.gravity(m, q),
        "nonlinear_effects": lambda m: rbd.nonlinear_effects(m, q, v),
        "forward_kinematics(q)": lambda m: rbd.forward_kinematics(m, q),
        "forward_kinematics(q, v)": lambda m: rbd.forward_kinematics(m, q, v),
        "forward_kinematics(q, v, a)": lambda m: rbd.forward_kinematics(m, q, v, a),
        "frame_placements": lambda m: rbd.frame_placements(m, q),
        "frame_placement": lambda m: rbd.frame_placement(m, q, frame),
        "frame_jacobian": lambda m: rbd.frame_jacobian(m, q, frame),
        "frame_jacobian(world)": lambda m: rbd.frame_jacobian(m, q, frame, "world"),
        "frame_jacobian(local)": lambda m: rbd.frame_jacobian(m, q, frame, reference="local"),
        "center_of_mass(q)": lambda m: rbd.center_of_mass(m, q),
        "center_of_mass(q, v)": lambda m: rbd.center_of_mass(m, q, v),
        "center_of_mass(q, v, a)": lambda m: rbd.center_of_mass(m, q, v, a),
        "com_jacobian": lambda m: rbd.com_jacobian(m, q),
        "centroidal_momentum_matrix": lambda m: rbd.centroidal_momentum_matrix(m, q),
        "centroidal_momentum(q, v)": lambda m: rbd.centroidal_momentum(m, q, v),
        "centroidal_momentum(q, v, a)": lambda m: rbd.centroidal_momentum(m, q, v, a),
    }


def _same(x, y, name):
    if isinstance(x, tuple):
        assert type(x) is type(y) and len(x) == len(y), name
        for a, b in zip(x, y):
            _same(a, b, name)
    elif x is None:
        assert y is None, name
    else:
        assert type(x) is np.ndarray and x.flags.c_contiguous and x.flags.writeable, name
        np.testing.assert_array_equal(x, y, err_msg=name)


class _Subclass(Model):
    """A Model subclass: the fronts read only exact Models."""

    __slots__ = ()


def _as_subclass(model):
    other = object.__new__(_Subclass)
    other.__setstate__(model.__getstate__())
    return other


@pytest.mark.parametrize("name", ["solo12", "panda"])
def test_fronts_equal_the_batch_route_and_the_general_path(name):
    """Each front's result is the batch of one's bit for bit; a subclass model and a model
    without a record (both declined: general path) give the same numbers."""
    if not record.AVAILABLE:
        pytest.skip("the record cannot be read here: the fronts decline every call")
    model = rbd.load_robot(name)
    q, v, a = _state(model)
    frame = model.frames[-1].name
    sub = _as_subclass(model)
    bare = pickle.loads(pickle.dumps(model))
    Model.__dict__["_record"].__delete__(bare)
    assert isinstance(sub, Model) and sub == model
    for call_name, call in _calls(model, q, v, a, frame).items():
        fast = call(model)
        _same(fast, call(sub), call_name)
        _same(fast, call(bare), call_name)
    # against the batch route (one row), which never runs a front
    batch = _calls(model, q[None], v[None], a[None], frame)
    for call_name in ("rnea", "aba", "crba", "minverse", "frame_jacobian(world)",
                      "frame_placements", "centroidal_momentum_matrix"):
        one = _calls(model, q, v, a, frame)[call_name](model)
        np.testing.assert_array_equal(one, batch[call_name](model)[0], err_msg=call_name)


def test_fronts_decline_and_the_general_path_names_the_problem(solo):
    """A front returns None where it cannot take the call; the public call then raises
    what the general path says."""
    q, v, a = _state(solo)
    frame = solo.frames[-1].name
    assert kinematics._frame_jacobian_front(solo, q, "no such frame", "world",
                                            kinematics._REF) is None
    assert kinematics._frame_jacobian_front(solo, q, frame, "sideways",
                                            kinematics._REF) is None
    assert kinematics._frame_jacobian_front(solo, q, [frame], "world",
                                            kinematics._REF) is None    # unhashable
    assert api._rnea_front(_as_subclass(solo), q, v, a) is None
    assert api._rnea_front("not a model", q, v, a) is None
    assert api._crba_front(solo, q.astype(np.float32)) is None
    with pytest.raises((KeyError, ValueError), match="no such frame"):
        rbd.frame_jacobian(solo, q, "no such frame")
    with pytest.raises(ValueError, match="sideways"):
        rbd.frame_jacobian(solo, q, frame, "sideways")
    with pytest.raises((KeyError, ValueError, TypeError)):
        rbd.frame_placement(solo, q, [frame])
    with pytest.raises(ValueError):
        rbd.rnea(solo, q[:-1], v, a)
    bad = q.copy()
    bad[3:7] *= 2.0                  # an unnormalised quaternion: the entry refuses it
    with pytest.raises(ValueError, match="quaternion"):
        rbd.crba(solo, bad)


def test_record_holds_constants_only(solo):
    """The record is a tuple of the model's read-only arrays, ints, shape tuples and the
    frame-id dict: the scratch stays off the Model (the fronts read cpu/scratch.py's
    lists); a pickle leaves it behind and unpickling makes it again."""
    rec = solo._record
    assert isinstance(rec, tuple) and rec[record.MI] is solo.mi
    assert rec[record.KEY] == solo._scratch_key and rec[record.SJ] == (6, solo.nv)
    for x in rec:
        assert not (isinstance(x, np.ndarray) and x.flags.writeable)
    assert "_record" not in solo.__getstate__()
    again = pickle.loads(pickle.dumps(solo))
    assert again._record is not rec and again._record[record.SJ] == rec[record.SJ]


def test_impulse_dynamics_made_by_its_entry(solo):
    """The held impulse entry makes v_after, the impulses and ImpulseDynamics itself (the
    GIL let go only around the kernel): the declared batch's numbers bit for bit, each
    array held once; dependent contacts and a singular state raise and leave nothing
    behind."""
    import sys
    from rbdiff.results import ImpulseDynamics
    q, v, _ = _state(solo, 3)
    feet = tuple(rbd.Contact(f, "3d") for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"))
    r = rbd.impulse_dynamics(solo, q, v, feet, 0.3)
    assert type(r) is ImpulseDynamics and sys.getrefcount(r) == 2
    assert [sys.getrefcount(x) for x in r] == [3, 3]
    for got, want in zip(r, rbd.impulse_dynamics(solo, q[None], v[None], feet, 0.3)):
        assert got.flags.c_contiguous and got.flags.owndata
        np.testing.assert_array_equal(got, want[0])
    twice = feet + feet[:1]          # a repeated contact: dependent rows without damping
    with pytest.raises(rbd.DependentContacts):
        rbd.impulse_dynamics(solo, q, v, twice)
    from rbdiff import contacts
    h = contacts._held(solo, twice)

    def refused():      # the entry itself (the general path then raises DependentContacts)
        with pytest.raises(ValueError):
            contacts._id_held(solo.mi, solo.mf, solo.frame_parents, solo.frame_mf, q, v,
                              h[2], h[3], 0.0, 0.0, h[5], h[4], solo._sv, h[6],
                              ImpulseDynamics)

    grown = allocated_by(refused, 50)
    assert grown < 50 * 8 * solo.nv, grown      # less than one leaked output a call
