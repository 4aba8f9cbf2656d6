"""Compiled fronts: single float64 calls that take the model itself.

A front takes the public function's own arguments (the model, the state, a frame name, a
reference name; each a REF, kernels/fastargs.py), reads the model's arrays, its held
scratch and the output shapes from the model's record (cpu/record.py), looks the frame
and reference up in their dictionaries, and runs the single-call entry (cpu/single.py)
with them: the api layer's fast path is then one call with the user's arguments, bound
as a METH_FASTCALL builtin (kernels/fastcall.py). It returns the entry's result, or None
(nothing made) where it does not take the call: not exactly a Model with a record, an
unknown frame or reference, or an argument the entry does not take (the entry's miss);
the general path then runs, and names the problem. The entries' own checks raise as
before.
"""

from numba.extending import register_jitable

from ..kernels.fastargs import (dict_index, held_array, is_none, model_record, none_ref,
                                record_array, record_int, record_object, record_shape)
from ..kernels.jit import fast_entry, native
from .centroidal import centroidal_map_one
from .record import (AVAILABLE, FMF, FPARENTS, FRAME_IDS, HELD_F_KIND, HELD_KIND, KEY, MF,
                     MI, SFRAMES, SJ, SM, ST, SV, SVV)
from .single import (aba_one, crba_one, forward_kinematics_one, frame_jacobian_one,
                     frame_placement_one, frame_placements_one, minverse_one, rnea_one)


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


@fast_entry
def rnea_front(model, q, v, a, fext):
    """fext: a REF to None, or to the forces the entry checks."""
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    if is_none(fext):
        return rnea_one(mi, mf, q, v, a, None, ws, record_shape(rec, SV, 1))
    return rnea_one(mi, mf, q, v, a, fext, ws, record_shape(rec, SV, 1))


@fast_entry
def aba_front(model, q, v, tau, fext):
    """fext as rnea_front's."""
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    if is_none(fext):
        return aba_one(mi, mf, q, v, tau, None, ws, record_shape(rec, SV, 1))
    return aba_one(mi, mf, q, v, tau, fext, ws, record_shape(rec, SV, 1))


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
def forward_kinematics_front(model, q, v, a, result):
    """v and a: REFs to None where not given (the result's velocities, accelerations
    None); a without v: declined (the general path takes v as zero)."""
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    sT, sm = record_shape(rec, ST, 3), record_shape(rec, SM, 2)
    if is_none(v):
        if not is_none(a):
            return none_ref()
        return forward_kinematics_one(mi, mf, q, None, None, ws, sT, None, None, result)
    if is_none(a):
        return forward_kinematics_one(mi, mf, q, v, None, ws, sT, sm, None, result)
    return forward_kinematics_one(mi, mf, q, v, a, ws, sT, sm, sm, result)


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
def centroidal_map_front(model, q):
    ok, rec = model_record(model)
    if not ok:
        return none_ref()
    mi, mf, ws = _tree(rec)
    return centroidal_map_one(mi, mf, q, ws, record_shape(rec, SJ, 2))


def _decline(*args):
    """The front where the record cannot be read: the general path runs."""
    return None


def bind(front, name, namespace, shapes=()):
    """Bind ``front`` at ``namespace[name]`` as kernels.jit.native does (compiled on its
    first call, then called as a METH_FASTCALL builtin): every argument a REF, but the
    positions ``shapes`` (a shape tuple the api layer keeps). Where the record is not
    AVAILABLE, a stand-in that declines every call."""
    if not AVAILABLE:
        namespace[name] = _decline
        return _decline
    n = front.py_func.__code__.co_argcount
    return native(front, name, namespace, inputs=(),
                  refs=tuple(k for k in range(n) if k not in shapes), shapes=tuple(shapes))
