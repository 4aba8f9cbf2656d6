"""DDP's contact contraction from the derivative step's first-order blocks (issue 27):
cpu.contact_contraction.contact_contraction_given_one, which takes
contact_dynamics_derivatives' blocks (forces in each contact's reference) instead of
computing them, against rbd.contact_dynamics_contraction (which computes them itself),
on point feet and surface feet in LOCAL and LOCAL_WORLD_ALIGNED at once (the legged DDP
on it: tests/test_trajopt_ddp_legged.py)."""

import numpy as np
import pytest
from conftest import robot_pair

import rbdiff as rbd
from rbdiff.contacts import pack
from rbdiff.cpu.contact_contraction import contact_contraction_given_one
from rbdiff.cpu.scratch import single_call_scratch


def _given(model, q, v, tau, contacts, lam_a, lam_f, D=None):
    cint, cflt, _ = pack(model, contacts)
    if D is None:
        d = rbd.contact_dynamics_derivatives(model, q, v, tau, contacts)
        D = np.stack([np.concatenate([d.dqdd_dq, d.dforces_dq]),
                      np.concatenate([d.dqdd_dv, d.dforces_dv]),
                      np.concatenate([d.dqdd_dtau, d.dforces_dtau])])
    nv = model.nv
    out = [np.empty((nv, nv)) for _ in range(4)]
    ws = single_call_scratch(model.njoints, nv, np.float64, False)[0]
    # the types ddp_segment calls it with (a view of its (T, 3, nv + ncmax, nv) array,
    # read-only packs): one compiled signature for both
    Dv = np.zeros((D.shape[0], D.shape[1] + 1, D.shape[2]))[:, :D.shape[1]]
    Dv[:] = D
    contact_contraction_given_one(model.mi, model.mf, model.frame_parents, model.frame_mf, q,
                                  v, tau, lam_a, lam_f, Dv, cint, cflt, 0.0, ws,
                                  *out)
    return out


CASES = {"solo12": ("3d", ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"), (10.0, 2.0)),
         "talos_full_v2": ("6d", ("left_sole_link", "right_sole_link"), (6.0, 3.0))}


@pytest.mark.parametrize("robot", sorted(CASES))
def test_given_derivatives_equal_the_contraction(robot):
    model, _ = robot_pair(robot, True)
    kind, feet, gains = CASES[robot]
    refs = ("local_world_aligned", "local")
    contacts = tuple(rbd.Contact(f, kind, reference=refs[i % 2], gains=gains,
                                 placement=np.eye(4))
                     for i, f in enumerate(feet))
    rng = np.random.default_rng(3)
    q = rbd.random_configuration(model, rng)
    v, tau, lam_a = rng.normal(size=(3, model.nv))
    lam_f = rng.normal(size=sum(c.dim for c in contacts))
    ref = rbd.contact_dynamics_contraction(model, q, v, tau, contacts, lam_a, lam_f)
    got = _given(model, q, v, tau, contacts, lam_a, lam_f)
    for name, a, b in zip(ref._fields, got, ref):
        scale = np.abs(b).max()
        assert scale > 0
        assert np.abs(a - b).max() <= 1e-12 * scale, (name, np.abs(a - b).max() / scale)


def test_given_derivatives_bad_shape_refused():
    model, _ = robot_pair("solo12", True)
    contacts = tuple(rbd.Contact(f, "3d") for f in ("FL_FOOT", "FR_FOOT"))
    q = rbd.neutral(model)
    z = np.zeros(model.nv)
    with pytest.raises(ValueError, match="first-order blocks"):
        _given(model, q, z, z, contacts, z, np.zeros(6), np.zeros((3, model.nv, model.nv)))
