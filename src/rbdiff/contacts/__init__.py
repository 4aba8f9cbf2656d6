"""Contacts: their descriptions (:class:`Contact`), contact dynamics and impulse dynamics
and their first-order derivatives (kernels/contact_dynamics.py, kernels/impulse_dynamics.py;
entries in cpu/contacts.py).

A set of contacts is an argument, not model state: the same model serves every contact
phase. A tuple of contacts is packed once per model into two small tables the kernels
read (cint: frame, dimension, reference, first row, parent joint; cflt: Kp, Kd, the
reference placement), cached by the tuple; the tables travel to the entries as options
and the number of constraint rows as the declared size token "nc" (declare.py).

Single float64 calls take a fast path as frame_motion.py's: the packing and this
thread's scratch found in one lookup (_held), a natively bound entry without Numba's
runtime on that scratch (cpu/contacts.py's ``*_held``); anything else (float32,
complex128, a batch, fext, a refused input) goes through the declared general path.
"""

import math
import threading

import numpy as np

from ..cpu import contacts as cc
from ..cpu.scratch import model_table
from ..declare import Function, caller_outputs, frame_index
from ..kernels.contact_dynamics import (CF_KD, CF_KP, CF_P, CF_R, CF_WIDTH, CI_WIDTH,
                                        SINGULAR_RTOL)
from ..kernels.jit import native_ref
from ..kernels.kinematics_derivatives import LOCAL, LOCAL_WORLD_ALIGNED
from ..results import (ContactDynamics, ContactDynamicsDerivatives, ImpulseDynamics,
                       ImpulseDynamicsDerivatives, reference_name)
from ..validation import DIVERGED

__all__ = ["Contact", "DependentContacts", "contact_dynamics",
           "contact_dynamics_derivatives", "impulse_dynamics",
           "impulse_dynamics_derivatives"]

_KINDS = {"3d": 3, "6d": 6}
_REFS = {"local": LOCAL, "local_world_aligned": LOCAL_WORLD_ALIGNED}


class Contact:
    """A rigid contact on a frame of the model: a point contact (``kind="3d"``: the
    frame's origin cannot move; 3 force rows) or a surface contact (``"6d"``: the frame
    cannot move; 6 rows, force then moment). ``frame``: a frame name or an index into
    model.frames (resolved per model; a frame on the universe is refused).
    ``reference``: where the constraint and its force are expressed, "local" (the
    contact frame) or "local_world_aligned" (at its origin, world axes); "world" is
    refused, as Pinocchio does. ``gains=(kp, kd)``: Baumgarte gains on the position and
    velocity error, each a number >= 0 or one per row (3 for "3d", 6 for "6d"), in the
    contact frame; ``placement``: the reference placement (4x4 world pose of where the
    contact frame should be), which kp > 0 pulls the frame to: required then (the
    frame's current placement, ``rbd.frame_placement(model, q, frame)``, holds it where
    it stands); None only with kp = 0 (Pinocchio's default, the identity, would pull the
    frame toward the world origin: pass ``placement=np.eye(4)`` for that).

    Pinocchio: ``RigidConstraintModel(CONTACT_3D | CONTACT_6D, model, frame.parentJoint,
    frame.placement, LOCAL | LOCAL_WORLD_ALIGNED)`` with joint2 the universe at
    ``placement`` (its ``joint2_placement``), ``corrector.Kp = kp``, ``corrector.Kd = kd``:
    with a = J qdd + gamma the constraint's acceleration, a = -Kp perr - Kd verr (3D:
    perr = R^T (p - p2), verr the frame origin's velocity; 6D: perr = log6(oMc2^-1 oMc1),
    verr the frame's spatial velocity; all LOCAL, rotated to the reference).
    Crocoddyl: ContactModel3D / ContactModel6D(state, frame id, xref, (kp, kd)) with the
    same frame and type (Crocoddyl's LOCAL / LOCAL_WORLD_ALIGNED reference).

    Immutable and hashable: a tuple of contacts keys the packing cache."""

    __slots__ = ("frame", "kind", "reference", "gains", "placement", "_key")

    def __init__(self, frame, kind="3d", reference="local", gains=(0.0, 0.0),
                 placement=None):
        k = str(kind).lower() if isinstance(kind, str) else kind
        if k not in _KINDS:
            raise ValueError(f"Contact kind: expected '3d' (a point contact) or '6d' (a "
                             f"surface contact), got {kind!r}")
        ref = reference_name(reference)
        if ref == "world":
            raise ValueError("Contact reference: 'world' is not a contact reference (as in "
                             "Pinocchio's constraintDynamics): use 'local' or "
                             "'local_world_aligned'")
        if isinstance(frame, (bool, np.bool_)) or not isinstance(frame, (str, int,
                                                                         np.integer)):
            raise TypeError(f"Contact frame: expected a frame name or an index, got {frame!r}")
        dim = _KINDS[k]
        try:
            kp, kd = gains
        except (TypeError, ValueError):
            raise ValueError(f"Contact gains: expected (kp, kd), got {gains!r}") from None
        g = tuple(_gain(x, dim, name) for x, name in ((kp, "kp"), (kd, "kd")))
        if placement is not None:
            T = np.asarray(placement, dtype=float)
            R = T[:3, :3] if T.shape == (4, 4) else None
            if R is None or not np.all(np.isfinite(T)) or \
                    not np.allclose(R @ R.T, np.eye(3), atol=1e-9) or np.linalg.det(R) < 0:
                raise ValueError("Contact placement: expected a 4x4 homogeneous transform "
                                 "with a rotation block, or None")
            placement = tuple(float(x) for x in T[:3].ravel())
        elif any(g[0]):       # an identity reference would pull the frame to the origin
            raise ValueError("Contact: kp > 0 needs a placement: the reference the frame is "
                             "pulled to; pass placement=..., e.g. the frame's current "
                             "placement from rbd.frame_placement(model, q, frame) (or "
                             "np.eye(4) to pull it to the world origin)")
        object.__setattr__(self, "frame", frame if isinstance(frame, str) else int(frame))
        object.__setattr__(self, "kind", k)
        object.__setattr__(self, "reference", ref)
        object.__setattr__(self, "gains", g)
        object.__setattr__(self, "placement", placement)
        object.__setattr__(self, "_key", (self.frame, k, ref, g, placement))

    def __setattr__(self, name, value):
        raise AttributeError("Contact is immutable")

    def __eq__(self, other):
        return type(other) is Contact and other._key == self._key

    def __hash__(self):
        return hash(self._key)

    def __repr__(self):
        return (f"Contact({self.frame!r}, kind={self.kind!r}, reference={self.reference!r}"
                + (f", gains={self.gains!r}" if any(any(x) for x in self.gains) else "")
                + (", placement=..." if self.placement is not None else "") + ")")

    def __reduce__(self):
        # rebuilt through __init__ (pickling: dask workers, multiprocessing), since
        # __setattr__ refuses the default slot-by-slot restore
        T = None if self.placement is None else np.vstack(
            [np.reshape(self.placement, (3, 4)), [0.0, 0.0, 0.0, 1.0]])
        return Contact, (self.frame, self.kind, self.reference, self.gains, T)

    def __dask_tokenize__(self):
        return ("rbdiff.Contact", self._key)

    @property
    def dim(self):
        """The contact's constraint rows: 3 or 6."""
        return _KINDS[self.kind]


def _gain(x, dim, name):
    a = np.asarray(x, dtype=float)
    if a.ndim == 0:
        a = np.full(dim, float(a))
    if a.shape != (dim,) or not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError(f"Contact gains: {name} must be a finite number >= 0 or {dim} of "
                         f"them, got {x!r}")
    return tuple(float(v) for v in a)


class DependentContacts(ValueError):
    """Contacts whose constraint rows are linearly dependent (J M^-1 J^T singular)."""


# ---- packing -----------------------------------------------------------------------------

# per model (cpu.scratch.model_table): {id(contacts): (contacts, packed)} for the objects
# the fast paths see again and again (a caller's tuple or Contact, immutable, kept alive
# here so its id is not reused), and {contacts tuple: packed} by value for every other
# sequence of equal contacts: memos of constants, not on the Model (it stays as loaded)
_BY_ID, _BY_VALUE = {}, {}
_PACKS_MAX = 1024       # models remembered (then forgotten all at once)
_BY_ID_MAX = 64         # objects remembered by id per model (then by value only)


def _as_tuple(contacts):
    if isinstance(contacts, Contact):
        return (contacts,)
    try:
        t = tuple(contacts)
    except TypeError:
        raise TypeError(f"contacts: expected a Contact or a sequence of them, got "
                        f"{type(contacts).__name__}") from None
    for c in t:
        if type(c) is not Contact:
            raise TypeError(f"contacts: expected rbd.Contact items, got {type(c).__name__}")
    return t


def pack(model, contacts):
    """(cint, cflt, nc) of ``contacts`` (a Contact or a sequence) on ``model``, cached:
    by the object's id first (one dictionary lookup: the fast paths), then by value."""
    by_id = model_table(_BY_ID, model, _PACKS_MAX)
    hit = by_id.get(id(contacts))
    if hit is not None and hit[0] is contacts:
        return hit[1]
    t = _as_tuple(contacts)
    by_value = model_table(_BY_VALUE, model, _PACKS_MAX)
    got = by_value.get(t)
    if got is None:
        got = by_value[t] = _pack(model, t)
    if len(by_id) < _BY_ID_MAX and type(contacts) in (tuple, Contact):   # immutable only
        by_id[id(contacts)] = (contacts, got)
    return got


def _pack(model, contacts):
    cint = np.zeros((len(contacts), CI_WIDTH), np.int64)
    cflt = np.zeros((len(contacts), CF_WIDTH))
    row = 0
    for k, c in enumerate(contacts):
        f = frame_index(model, c.frame)
        j = int(model.frame_parents[f])
        if j == 0:
            raise ValueError(f"contacts: frame {model.frames[f].name!r} (contact {k}) is "
                             "attached to the universe, which cannot move: a contact needs "
                             "a frame on a moving body")
        cint[k] = (f, c.dim, _REFS[c.reference], row, j)
        cflt[k, CF_KP:CF_KP + c.dim] = c.gains[0]
        cflt[k, CF_KD:CF_KD + c.dim] = c.gains[1]
        if c.placement is None:
            cflt[k, CF_R:CF_R + 9] = np.eye(3).ravel()
        else:
            T = np.asarray(c.placement).reshape(3, 4)
            cflt[k, CF_R:CF_R + 9] = T[:, :3].ravel()
            cflt[k, CF_P:CF_P + 3] = T[:, 3]
        row += c.dim
    cint.flags.writeable = False
    cflt.flags.writeable = False
    return cint, cflt, row


# this thread's {id(contacts): (contacts, model, cint, cflt, nc, flat scratch)} for the
# fast paths, and its scratch by (model size, nc): one dictionary lookup a call instead
# of pack's two and thread_workspace's
class _Local(threading.local):
    def __init__(self):         # each thread's first use: the fast paths never miss it
        self.table = {}
        self.scratch = {}


_HELD = _Local()


def _held(model, contacts):
    """(contacts, model, cint, cflt, nc, scratch, (nc,)) for this thread: the packing
    (pack), a flat float64 scratch of cc.held_size and the impulses' shape, remembered by
    id(contacts) for the immutable objects (a tuple, a Contact; at most _BY_ID_MAX)."""
    table, scratch = _HELD.table, _HELD.scratch
    hit = table.get(id(contacts))
    if hit is not None and hit[0] is contacts and hit[1] is model:
        return hit
    cint, cflt, nc = pack(model, contacts)
    key = (model._scratch_key, nc)
    buf = scratch.get(key)
    if buf is None:
        buf = scratch[key] = np.zeros(cc.held_size(model.njoints, model.nv, nc))
    hit = (contacts, model, cint, cflt, nc, buf, (nc,))
    if type(contacts) in (tuple, Contact):        # immutable only: ids of live objects
        if len(table) >= _BY_ID_MAX:
            table.clear()
        table[id(contacts)] = hit
    return hit


def _number(x, name, message):
    try:
        y = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected a number, got {x!r}") from None
    if not math.isfinite(y) or y < 0:
        raise ValueError(message)
    return y


def _dependent(model, q, contacts, damping=0.0):
    """DependentContacts naming the first contact row that depends on the rows before
    it (and the contacts those rows belong to); with ``damping`` > 0 that was too small
    to lift the kernel's pivot threshold, the damping the kernel needs. A plain
    ValueError where the rows are not dependent: a configuration beyond
    validation.DIVERGED (a diverged rollout) or J M^-1 J^T independent once recomputed
    (the kernel's rounding-level pivot came from lost digits)."""
    from ..api import minverse
    from ..kinematics import frame_jacobian
    t = _as_tuple(contacts)
    q = np.asarray(q)
    if q.ndim == 2:       # a batch: the first item whose set is dependent
        for b in range(q.shape[0]):
            e = _dependent(model, q[b], t, damping)
            if e is not None:
                return type(e)(f"item {b}: {e}")
        return None
    q = q.real.astype(float)
    size = np.abs(q).max()
    if not size <= DIVERGED:        # the matrix is noise there: no claim about its rows
        return ValueError(f"contacts: J M^-1 J^T is singular at a configuration beyond "
                          f"any robot's (max |q| = {size:.3g}, not finite or beyond "
                          f"{DIVERGED:g}: a diverged rollout?): no evidence of "
                          "dependent contact rows")
    rows, owner = [], []
    for k, c in enumerate(t):
        J = frame_jacobian(model, q, c.frame, "local")
        rows.append(J[:c.dim])
        owner += [(k, r) for r in range(c.dim)]
    J = np.vstack(rows)
    W = J @ minverse(model, q) @ J.T
    scale = max(np.max(np.abs(np.diag(W))), np.finfo(float).tiny)
    # a damped pivot is at least the damping: the kernel refuses pivots below this
    need = f"{10 * SINGULAR_RTOL * (scale + damping):.1e}"
    fix = (f"Pass damping >= {need} (the regularised, least-norm forces; the damping "
           f"given, {damping:g}, is below the rounding level of J M^-1 J^T, whose largest "
           f"diagonal entry is {scale:.3g})" if damping > 0 else
           f"Pass damping > 0 (the regularised, least-norm forces; >= {need} for this "
           "J M^-1 J^T)")
    fix += " or fewer constraints (a point contact instead of a surface one, each frame once)"
    for r in range(1, len(owner) + 1):
        s = np.linalg.svd(W[:r, :r], compute_uv=False)
        if s[-1] <= 10 * SINGULAR_RTOL * scale:     # the kernel's pivot test, with margin
            k, i = owner[r - 1]
            before = sorted({owner[m][0] for m in range(r - 1)})
            return DependentContacts(
                f"contacts: row {i} of contact {k} ({t[k]!r}) depends on the rows of the "
                f"contacts before it ({', '.join(f'{m} ({t[m].frame!r})' for m in before)}): "
                f"J M^-1 J^T is singular, so the contact forces are not unique. {fix}")
    # s: the whole W's singular values (the loop's last r)
    return ValueError(f"contacts: the Cholesky factorisation of J M^-1 J^T met a pivot at "
                      f"rounding level, yet its rows are independent (condition number "
                      f"{s[0] / s[-1]:.3g}, max |q| = {size:.3g}): digits lost in the "
                      "dynamics, not dependent contact rows")


def _raise_dependent(e, model, q, contacts, damping=0.0):
    if isinstance(e, DependentContacts) or str(e) == cc.DEPENDENT:
        raise _dependent(model, q, contacts, damping) from None
    raise e


def _errors():
    return {cc.DEPENDENT: lambda model: DependentContacts(cc.DEPENDENT),
            cc.BAD_DAMPING: lambda model: ValueError(cc.BAD_DAMPING),
            cc.BAD_RESTITUTION: lambda model: ValueError(cc.BAD_RESTITUTION)}


def _into(out, result, values):
    """``values`` (the no-contact results) as ``result``, or copied into the caller's
    ``out`` (checked as the declared path checks it) and ``out`` returned."""
    if out is None:
        return result(*values)
    got = caller_outputs(out, [x.shape for x in values], values[0].dtype, result._fields)
    for o, x in zip(got, values):
        o[...] = x
    return _new(result, got)


# ---- contact dynamics ------------------------------------------------------------------

_FAST_MISS = (AttributeError, TypeError, ValueError)
_empty = np.empty
_new = tuple.__new__
# the held entries check q, v, tau themselves (jit.native_ref: False unless float64 vectors)
_cd_held = native_ref(cc.contact_dynamics_held, "_cd_held", globals(), (4, 5, 6))

_CONTACT_DYNAMICS = Function(
    "contact_dynamics", cc.contact_dynamics_one,
    (cc.contact_dynamics_batch, cc.contact_dynamics_parallel),
    (("q", "nq"), ("v", "nv"), ("tau", "nv")), (("nv",), ("nc",)), model_args="frames",
    fext=True, result=ContactDynamics, sizes=("nc",), errors=_errors())


def contact_dynamics(model, q, v, tau, contacts, damping=0.0, fext=None, out=None):
    """Accelerations and contact forces of the model held by ``contacts`` (a Contact or a
    sequence): ContactDynamics(qdd (nv,), forces (nc,)), the forces stacked in contact
    order, 3 per point contact and 6 ([force, moment]) per surface contact, each in its
    contact's reference (Pinocchio's lambda_c). Solves the KKT system

        [ M  J^T ] [ qdd ; -forces ] = [ tau - b(q, v) + J_ext ; -gamma - baumgarte ]

    through the structure (kernels/contact_dynamics.py): qdd_free by ABA, M^-1 from ABA's
    factorisation without M, the operational-space inverse W = J M^-1 J^T + damping I
    (Cholesky), forces = W^-1 (...), qdd = qdd_free + M^-1 J^T forces. After the call J
    qdd + gamma = -Kp perr - Kd verr (Contact). ``damping`` >= 0: the regularised
    solution (Pinocchio's forwardDynamics(q, v, tau, J, gamma, damping)); without it,
    dependent contact rows (the same frame twice, two surface contacts on one body)
    raise DependentContacts naming them. ``fext`` (njoints, 6): external forces, as aba.
    No contacts: qdd = aba(model, q, v, tau, fext) and an empty forces array.

    As Pinocchio's initConstraintDynamics + constraintDynamics (RigidConstraintModel,
    Contact's docstring). q (nq,), v, tau (nv,); a batch (B, nq), (B, nv) gives (B, nv)
    and (B, nc); float32 and complex128 compute in their dtype. ``out``: two arrays (qdd,
    forces) of those shapes and the computed dtype, C-contiguous, written into and
    returned (as rnea_derivatives' ``out``)."""
    try:
        if out is None and fext is None:
            h = _HELD.table.get(id(contacts))
            if h is None or h[0] is not contacts or h[1] is not model:
                h = _held(model, contacts)
            if h[4]:
                qdd, forces = _empty(model.nv), _empty(h[4])
                if _cd_held(model.mi, model.mf, model.frame_parents, model.frame_mf, q, v,
                            tau, h[2], h[3], float(damping), h[5], qdd, forces):
                    return _new(ContactDynamics, (qdd, forces))
    except _FAST_MISS:
        pass
    cint, cflt, nc = pack(model, contacts)
    d = _number(damping, "damping", cc.BAD_DAMPING)
    if nc == 0:
        from ..api import aba
        qdd = aba(model, q, v, tau, fext)
        return _into(out, ContactDynamics,
                     (qdd, np.zeros(qdd.shape[:-1] + (0,), qdd.dtype)))
    try:
        return _CONTACT_DYNAMICS(model, q, v, tau, fext=fext, options=(cint, cflt, d),
                                 sizes={"nc": nc}, out=out)
    except DependentContacts as e:
        _raise_dependent(e, model, q, contacts, d)


_cdd_held = native_ref(cc.contact_dynamics_derivatives_held, "_cdd_held", globals(),
                       (4, 5, 6))
_CONTACT_DYNAMICS_D = Function(
    "contact_dynamics_derivatives", cc.contact_dynamics_derivatives_one,
    (cc.contact_dynamics_derivatives_batch, cc.contact_dynamics_derivatives_parallel),
    (("q", "nq"), ("v", "nv"), ("tau", "nv")), (("nv", "nv"),) * 3 + (("nc", "nv"),) * 3,
    model_args="frames", fext=True, result=ContactDynamicsDerivatives, sizes=("nc",),
    errors=_errors())


def contact_dynamics_derivatives(model, q, v, tau, contacts, damping=0.0, fext=None,
                                 out=None):
    """Partial derivatives of contact_dynamics(model, q, v, tau, contacts, damping, fext):
    ContactDynamicsDerivatives(dqdd_dq, dqdd_dv, dqdd_dtau (nv, nv), dforces_dq,
    dforces_dv, dforces_dtau (nc, nv)), q derivatives in the tangent space; with
    ``damping`` > 0 those of the regularised solution (the same formulas with W = J M^-1
    J^T + damping I: the KKT inverse with the -damping I block).

    Analytical (Carpentier & Mansard 2018; kernels/contact_dynamics.py): the KKT system
    differentiated with its solution held, i.e. the RNEA derivatives at qdd with the
    contact forces applied to their bodies (through aba_derivatives: -M^-1 dID/dx), the
    contact frames' LOCAL acceleration derivatives at qdd (classical for point
    contacts) and the Baumgarte terms' derivatives, multiplied by the blocks of the KKT
    inverse (M^-1 - Y W^-1 Y^T, Y W^-1, -W^-1 with Y = M^-1 J^T, W = J Y).
    LOCAL_WORLD_ALIGNED forces add the rotation's derivative, w x f.

    As Pinocchio's computeConstraintDynamicsDerivatives (ddq_dq, ddq_dv, ddq_dtau,
    dlambda_dq, dlambda_dv, dlambda_dtau) after constraintDynamics; with damping, after
    constraintDynamics with ProximalSettings(mu=damping, max_iter=1) (one proximal
    iteration: the regularised solution and its derivatives), except that for
    LOCAL_WORLD_ALIGNED contacts Pinocchio's q blocks leave out the rotation of the
    damping term (damping R^T w x lambda). No contacts: the aba_derivatives and empty
    (0, nv) force blocks. A batch (B, ...) gives (B, nv, nv) and (B, nc, nv) blocks.
    ``out``: six arrays of those shapes to write into, as contact_dynamics'."""
    try:
        if out is None and fext is None:
            h = _HELD.table.get(id(contacts))
            if h is None or h[0] is not contacts or h[1] is not model:
                h = _held(model, contacts)
            nc = h[4]
            if nc:
                svv, snv = model._svv, (nc, model.nv)
                res = (_empty(svv), _empty(svv), _empty(svv), _empty(snv), _empty(snv),
                       _empty(snv))
                if _cdd_held(model.mi, model.mf, model.frame_parents, model.frame_mf, q, v,
                             tau, h[2], h[3], float(damping), h[5], *res):
                    return _new(ContactDynamicsDerivatives, res)
    except _FAST_MISS:
        pass
    cint, cflt, nc = pack(model, contacts)
    d = _number(damping, "damping", cc.BAD_DAMPING)
    if nc == 0:
        from ..derivatives import aba_derivatives
        a = aba_derivatives(model, q, v, tau, fext)
        z = np.zeros(a[0].shape[:-2] + (0, model.nv), a[0].dtype)
        return _into(out, ContactDynamicsDerivatives, (*a, z, z.copy(), z.copy()))
    try:
        return _CONTACT_DYNAMICS_D(model, q, v, tau, fext=fext, options=(cint, cflt, d),
                                   sizes={"nc": nc}, out=out)
    except DependentContacts as e:
        _raise_dependent(e, model, q, contacts, d)


# ---- impulse dynamics ------------------------------------------------------------------

# (the entry makes v_after and the impulses from their shapes, and the named result)
_id_held = native_ref(cc.impulse_dynamics_held, "_id_held", globals(), (4, 5),
                      outputs=(12, 13), result=14)
_idd_held = native_ref(cc.impulse_dynamics_derivatives_held, "_idd_held", globals(), (4, 5))

_IMPULSE_DYNAMICS = Function(
    "impulse_dynamics", cc.impulse_dynamics_one,
    (cc.impulse_dynamics_batch, cc.impulse_dynamics_parallel),
    (("q", "nq"), ("v_before", "nv")), (("nv",), ("nc",)), model_args="frames",
    result=ImpulseDynamics, sizes=("nc",), errors=_errors())
_IMPULSE_DYNAMICS_D = Function(
    "impulse_dynamics_derivatives", cc.impulse_dynamics_derivatives_one,
    (cc.impulse_dynamics_derivatives_batch, cc.impulse_dynamics_derivatives_parallel),
    (("q", "nq"), ("v_before", "nv")), (("nv", "nv"),) * 2 + (("nc", "nv"),) * 2,
    model_args="frames", result=ImpulseDynamicsDerivatives, sizes=("nc",), errors=_errors())


def _restitution(r):
    y = _number(r, "restitution", cc.BAD_RESTITUTION)
    if y > 1.0:
        raise ValueError(cc.BAD_RESTITUTION)
    return y


def impulse_dynamics(model, q, v_before, contacts, restitution=0.0, damping=0.0, out=None):
    """The velocity jump of an impact with ``contacts``: ImpulseDynamics(v_after (nv,),
    impulses (nc,)), the impulses stacked as contact_dynamics' forces (in each contact's
    reference), solving M (v_after - v_before) = J^T impulses, J v_after = -restitution
    J v_before (0 <= restitution <= 1) through the same operational-space solve (M^-1
    without M, W = J M^-1 J^T + damping I; Baumgarte gains play no part). Dependent rows
    without damping raise DependentContacts; no contacts: v_after = v_before.

    As Pinocchio's initConstraintDynamics + impulseDynamics(model, data, q, v, contact
    models, contact datas, r_coeff) (impulses in data.impulse_c) and the older
    impulseDynamics(q, v, J, r, damping). q (nq,), v_before (nv,); a batch gives (B, nv)
    and (B, nc). ``out``: two arrays (v_after, impulses) to write into, as
    contact_dynamics'."""
    try:
        if out is None:
            h = _HELD.table.get(id(contacts))
            if h is None or h[0] is not contacts or h[1] is not model:
                h = _held(model, contacts)
            if h[4]:
                r = _id_held(model.mi, model.mf, model.frame_parents, model.frame_mf, q,
                             v_before, h[2], h[3], float(restitution), float(damping), h[5],
                             h[4], model._sv, h[6], ImpulseDynamics)
                if r is not None:
                    return r
    except _FAST_MISS:
        pass
    cint, cflt, nc = pack(model, contacts)
    d = _number(damping, "damping", cc.BAD_DAMPING)
    r = _restitution(restitution)
    if nc == 0:
        v = np.array(v_before, dtype=np.result_type(q, v_before, np.float32))
        return _into(out, ImpulseDynamics, (v, np.zeros(v.shape[:-1] + (0,), v.dtype)))
    try:
        return _IMPULSE_DYNAMICS(model, q, v_before, options=(cint, cflt, r, d),
                                 sizes={"nc": nc}, out=out)
    except DependentContacts as e:
        _raise_dependent(e, model, q, contacts, d)


def impulse_dynamics_derivatives(model, q, v_before, contacts, restitution=0.0, damping=0.0,
                                 out=None):
    """Partial derivatives of impulse_dynamics(model, q, v_before, contacts, restitution,
    damping): ImpulseDynamicsDerivatives(dvafter_dq, dvafter_dv (nv, nv), dimpulses_dq,
    dimpulses_dv (nc, nv)), q derivatives in the tangent space; with ``damping`` > 0
    those of the regularised solution (W = J M^-1 J^T + damping I below).

    Analytical (kernels/impulse_dynamics.py): the q derivative from the RNEA derivatives
    at v = 0, a = v_after - v_before, no gravity, the impulses applied to their bodies,
    and the contact frames' LOCAL velocity derivatives at v_after (and v_before, times
    restitution); the v_before derivative is K^-1 [M ; -r J]: dimpulses_dv =
    -(1 + r) W^-1 J, dvafter_dv = I + M^-1 J^T dimpulses_dv. As Pinocchio's
    computeImpulseDynamicsDerivatives (data.ddq_dq, ddq_dv, dlambda_dq, dlambda_dv) after
    impulseDynamics. A batch gives (B, nv, nv) and (B, nc, nv) blocks. ``out``: four
    arrays of those shapes to write into, as contact_dynamics'."""
    try:
        if out is None:
            h = _HELD.table.get(id(contacts))
            if h is None or h[0] is not contacts or h[1] is not model:
                h = _held(model, contacts)
            nc = h[4]
            if nc:
                svv, snv = model._svv, (nc, model.nv)
                res = (_empty(svv), _empty(svv), _empty(snv), _empty(snv))
                if _idd_held(model.mi, model.mf, model.frame_parents, model.frame_mf, q,
                             v_before, h[2], h[3], float(restitution), float(damping), h[5],
                             *res):
                    return _new(ImpulseDynamicsDerivatives, res)
    except _FAST_MISS:
        pass
    cint, cflt, nc = pack(model, contacts)
    r = _restitution(restitution)
    d = _number(damping, "damping", cc.BAD_DAMPING)
    if nc == 0:
        v = np.asarray(v_before)
        dt = np.result_type(q, v, np.float32)
        eye = np.broadcast_to(np.eye(model.nv, dtype=dt), v.shape[:-1] + (model.nv,) * 2)
        z = np.zeros(v.shape[:-1] + (0, model.nv), dt)
        return _into(out, ImpulseDynamicsDerivatives,
                     (np.zeros_like(eye), eye.copy(), z, z.copy()))
    try:
        return _IMPULSE_DYNAMICS_D(model, q, v_before, options=(cint, cflt, r, d),
                                   sizes={"nc": nc}, out=out)
    except DependentContacts as e:
        _raise_dependent(e, model, q, contacts, d)
