"""Compiled fronts: single float64 calls that take the model itself.

A front takes the public function's own arguments (the model, the state, a frame name, a
reference name; each a REF, kernels/fastargs.py), reads the model's arrays and the output
shapes from the model's record (cpu/record.py) and the held workspace of its size from
cpu/scratch.py's list, looks the frame and reference up in their dictionaries, and runs
the single-call entry (cpu/single.py) with them: the api layer's fast path is then one call with the user's arguments, bound
as a METH_FASTCALL builtin (kernels/fastcall.py). It returns the entry's result, or None
(nothing made) where it does not take the call: not exactly a Model with a record, an
unknown frame or reference, or an argument the entry does not take (the entry's miss);
the general path then runs, and names the problem. The entries' own checks raise as
before.
"""

from numba.extending import register_jitable

from ..kernels.fastargs import (dict_index, held_array, model_record, none_ref,
                                record_array, record_int, record_object, record_shape)
from ..kernels.jit import fast_entry, kernel, native
from .record import (AVAILABLE, FMF, FPARENTS, FRAME_IDS, HELD_F_KIND, HELD_KIND, KEY, MF,
                     MI, S3V, SFRAMES, SJ, SM, ST, SV, SVV)
from . import centroidal as _centroidal
from . import single as _single


def _body(entry):
    """The single entry ``entry``'s function compiled as a kernel is (kernels.jit):
    linked into the front that calls it and turned into machine code once, with the
    front, not first on its own (with its Python wrappers) and then again in the front
    (a cold first call ~10 % shorter: frame_jacobian 2.11 -> 1.88 s, rnea 2.30 -> 2.08)."""
    return kernel(entry.py_func) if hasattr(entry, "py_func") else entry


(aba_one, crba_one, forward_kinematics_one, frame_jacobian_one, frame_placement_one,
 frame_placements_one, gravity_one, minverse_one, nonlinear_effects_one, rnea_one) = (
    _body(getattr(_single, name)) for name in (
        "aba_one", "crba_one", "forward_kinematics_one", "frame_jacobian_one",
        "frame_placement_one", "frame_placements_one", "gravity_one", "minverse_one",
        "nonlinear_effects_one", "rnea_one"))
(center_of_mass_one, centroidal_map_one, centroidal_momentum_one, com_jacobian_one) = (
    _body(getattr(_centroidal, name)) for name in (
        "center_of_mass_one", "centroidal_map_one", "centroidal_momentum_one",
        "com_jacobian_one"))


# inlined (as fastargs' helpers): they hand back array structs without reference counts
@register_jitable(inline="always")
def _tree(rec):
    """The model's joint tables and the held workspace of its size: (mi, mf, ws)."""
    return (record_array(rec, MI, "i2r"), record_array(rec, MF, "f2r"),
            held_array("rbdiff_held", record_int(rec, KEY), HELD_KIND))


@register_jitable(inline="always")
def _frames(rec):
    """The frame tables: (frame_parents, frame_mf)."""
    return record_array(rec, FPARENTS, "i1r"), record_array(rec, FMF, "f2r")


# one front per variant (fext or not, v and a given or not), chosen in Python: a front
# with branches would compile every variant of its entry on its first call
@fast_entry
def rnea_front(model, q, v, a):
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    return rnea_one(mi, mf, q, v, a, None, ws, record_shape(rec, SV, 1))


@fast_entry
def rnea_fext_front(model, q, v, a, fext):
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    return rnea_one(mi, mf, q, v, a, fext, ws, record_shape(rec, SV, 1))


@fast_entry
def aba_front(model, q, v, tau):
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    return aba_one(mi, mf, q, v, tau, None, ws, record_shape(rec, SV, 1))


@fast_entry
def aba_fext_front(model, q, v, tau, fext):
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    return aba_one(mi, mf, q, v, tau, fext, ws, record_shape(rec, SV, 1))


@fast_entry
def gravity_front(model, q):
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    return gravity_one(mi, mf, q, ws, record_shape(rec, SV, 1))


@fast_entry
def nonlinear_effects_front(model, q, v):
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    return nonlinear_effects_one(mi, mf, q, v, ws, record_shape(rec, SV, 1))


@fast_entry
def crba_front(model, q):
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    return crba_one(mi, mf, q, ws, record_shape(rec, SVV, 2))


@fast_entry
def minverse_front(model, q):
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    F = held_array("rbdiff_held_f", record_int(rec, KEY), HELD_F_KIND)
    return minverse_one(mi, mf, q, ws, F, record_shape(rec, SVV, 2))


@fast_entry
def fk_q_front(model, q, result):
    """result: the named tuple class (results.Kinematics), as for the other fk fronts."""
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    return forward_kinematics_one(mi, mf, q, None, None, ws, record_shape(rec, ST, 3), None,
                                  None, result)


@fast_entry
def fk_qv_front(model, q, v, result):
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    return forward_kinematics_one(mi, mf, q, v, None, ws, record_shape(rec, ST, 3),
                                  record_shape(rec, SM, 2), None, result)


@fast_entry
def fk_qva_front(model, q, v, a, result):
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    sm = record_shape(rec, SM, 2)
    return forward_kinematics_one(mi, mf, q, v, a, ws, record_shape(rec, ST, 3), sm, sm,
                                  result)


@fast_entry
def frame_placements_front(model, q):
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    fparent, fmf = _frames(rec)
    return frame_placements_one(mi, mf, fparent, fmf, q, ws, record_shape(rec, SFRAMES, 3))


@fast_entry
def frame_placement_front(model, q, frame, shape):
    """shape: the (4, 4) tuple the api layer keeps."""
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    ok, f = dict_index(record_object(rec, FRAME_IDS), frame)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    fparent, fmf = _frames(rec)
    return frame_placement_one(mi, mf, fparent, fmf, q, f, ws, shape)


@fast_entry
def frame_jacobian_front(model, q, frame, reference, codes):
    """codes: the reference codes' dictionary (results.REFERENCE_CODES)."""
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    ok_f, f = dict_index(record_object(rec, FRAME_IDS), frame)
    ok_r, r = dict_index(codes, reference)
    if not (ok_f and ok_r):
        return none_ref()
    mi, mf, ws = _tree(rec)
    fparent, fmf = _frames(rec)
    return frame_jacobian_one(mi, mf, fparent, fmf, q, f, r, ws, record_shape(rec, SJ, 2))


@fast_entry
def com_q_front(model, q, s3):
    """s3: the (3,) tuple the api layer keeps (as the other com and momentum fronts')."""
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    return center_of_mass_one(mi, mf, q, None, None, ws, s3, None, None, None)


@fast_entry
def com_qv_front(model, q, v, s3, result):
    """result: the named tuple class (results.CenterOfMassVelocity)."""
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    return center_of_mass_one(mi, mf, q, v, None, ws, s3, s3, None, result)


@fast_entry
def com_qva_front(model, q, v, a, s3, result):
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    return center_of_mass_one(mi, mf, q, v, a, ws, s3, s3, s3, result)


@fast_entry
def com_jacobian_front(model, q):
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    return com_jacobian_one(mi, mf, q, ws, record_shape(rec, S3V, 2))


@fast_entry
def momentum_qv_front(model, q, v, s6):
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    return centroidal_momentum_one(mi, mf, q, v, None, ws, s6, None, None)


@fast_entry
def momentum_qva_front(model, q, v, a, s6, result):
    """result: the named tuple class (results.CentroidalMomentum)."""
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    return centroidal_momentum_one(mi, mf, q, v, a, ws, s6, s6, result)


@fast_entry
def centroidal_map_front(model, q):
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    return centroidal_map_one(mi, mf, q, ws, record_shape(rec, SJ, 2))


def _decline(*args):
    """The front where the record cannot be read, or nothing is compiled: the general
    path runs."""
    return None


def bind(front, name, namespace, shapes=()):
    """Bind ``front`` at ``namespace[name]`` as kernels.jit.native does (compiled on its
    first call, then called as a METH_FASTCALL builtin): every argument a REF, but the
    positions ``shapes`` (a shape tuple the api layer keeps). Where the record is not
    AVAILABLE, or under NUMBA_DISABLE_JIT (the intrinsics it reads the record with run
    only compiled), a stand-in that declines every call."""
    if not AVAILABLE or getattr(front, "py_func", None) is None:
        namespace[name] = _decline
        return _decline
    n = front.py_func.__code__.co_argcount
    return native(front, name, namespace, inputs=(),
                  refs=tuple(k for k in range(n) if k not in shapes), shapes=tuple(shapes))
