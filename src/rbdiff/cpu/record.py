"""A model's record: what the compiled fronts (cpu/fronts.py) read from the model.

A tuple kept in the Model's ``_record`` slot (set at construction and unpickling, by
Model.cache): the packed arrays, the scratch key, the frame ids and the output shapes.
The fronts read it through kernels.fastargs' ``model_record``, ``record_array``,
``record_int``, ``record_object`` and ``record_shape``, which trust its layout: every
array here is checked C-contiguous, of the dtype and dimension count its index below
says, when the record is made. Constants only (the scratch stays off the Model: the
fronts take the held workspace of the model's size from cpu/scratch.py's HELD lists,
registered here as symbols for ``fastargs.held_array``); a model shared by threads
shares its record.

``AVAILABLE`` is False where the slot cannot be read from compiled code (fastargs not
available, or CPython lays its member descriptors out otherwise); the fronts then
decline every call and the general path runs.
"""

import ctypes

import numpy as np

from ..kernels import fastargs
from ..model.model import Model
from .scratch import HELD, HELD_F

# record indices, and the array kinds fastargs.record_array reads them as
MI, MF, FPARENTS, FMF, KEY, FRAME_IDS, SV, SVV, SJ, ST, SM, SFRAMES, S3V = range(13)
KINDS = {MI: "i2r", MF: "f2r", FPARENTS: "i1r", FMF: "f2r"}
# the held workspaces' kinds (cpu/scratch.py: single_call_scratch's ws and F)
HELD_KIND, HELD_F_KIND = "f2w", "f3w"


def make(model):
    """The record of ``model`` (checked: each array as KINDS says)."""
    rec = (model.mi, model.mf, model.frame_parents, model.frame_mf, model._scratch_key,
           model._frame_ids, model._sv, model._svv, model._sJ, model._sT, model._sm,
           model._sframes, model._s3v)
    key = model._scratch_key
    for x, kind in [(rec[k], kind) for k, kind in KINDS.items()] + [
            (HELD[key], HELD_KIND), (HELD_F[key], HELD_F_KIND)]:
        want = np.float64 if kind[0] == "f" else np.int64
        if not (type(x) is np.ndarray and x.dtype == want and x.ndim == int(kind[1])
                and x.flags.c_contiguous and x.flags.writeable == (kind[2] == "w")):
            raise AssertionError(f"rbdiff: a model record's array is not {kind}")
    return rec


def _slot_offset():
    """The byte offset of Model's ``_record`` slot in an instance, read from its member
    descriptor (PyMemberDescrObject.d_member -> PyMemberDef.offset) and checked on an
    instance; None where that does not hold."""
    try:
        descr = Model.__dict__["_record"]
        member = ctypes.c_void_p.from_address(id(descr) + 40).value
        offset = ctypes.c_ssize_t.from_address(member + 16).value
        probe, mark = object.__new__(Model), object()
        descr.__set__(probe, mark)
        if ctypes.c_void_p.from_address(id(probe) + offset).value != id(mark):
            return None
        return offset
    except Exception:       # noqa: BLE001 -- any surprise: the fronts decline
        return None


def _register():
    offset = _slot_offset() if fastargs.AVAILABLE else None
    if offset is None:
        return False
    from llvmlite import binding
    binding.add_symbol("rbdiff_model_type", id(Model))
    # the offset as a symbol's address: cached machine code reads it in each process
    binding.add_symbol("rbdiff_model_record_offset", offset)
    binding.add_symbol("rbdiff_held", id(HELD))         # lists for the process's life
    binding.add_symbol("rbdiff_held_f", id(HELD_F))
    return True


AVAILABLE = _register()
Model.cache("_record", make)
