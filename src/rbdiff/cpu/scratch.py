"""Scratch of the single-call entries (cpu/single.py): allocated here, in the layer that
uses it, and owned by the entries, never by the Model (one model is shared by threads).

Two owners, by how the entry runs:

- ``HELD[model._scratch_key]``: the float64 workspace of the fast entries that hold the
  GIL for the whole call (kernels.jit.fast_entry: rnea, aba, crba, frames, centroidal,
  ...). No two threads can be inside such an entry at once, so one workspace per model
  size serves the process: one list index (~5 ns on a ~1 us call).
  ``HELD_F``: the same for M^-1's force scratch.
- :func:`thread_workspace`: the float64 workspace of the entries that release the GIL
  (kernels.jit.entry: contact, impulse and contraction calls run in parallel across
  threads), one per thread and model size (a ``threading.local``: ~0.1 us on calls of
  several us).

(Numba, so rbdiff, runs on CPython builds with a GIL: ``HELD`` rests on it.)

A caller who wants no allocation at all passes ``out=`` (the declared path) and keeps its
own arrays; the workspaces here are allocated once per (size, thread) and reused.
"""

import threading

import numpy as np

from ..kernels.kinematics_derivatives import STATE_WIDTH
from ..kernels.workspace import W_WIDTH
from ..model.model import Model


def single_call_scratch(njoints, nv, dtype=np.float64, forces=True):
    """Scratch of a single call (cpu/single.py's ``*_one``): the workspace (njoints+nv,
    W_WIDTH) and, with ``forces``, M^-1's force scratch F (njoints, nv, 6), njoints
    counting the universe (model.njoints). Fresh arrays: the declared path's own."""
    ws = np.empty((njoints + nv, W_WIDTH), dtype)
    return (ws, np.empty((njoints, nv, 6), dtype)) if forces else (ws,)


# lists indexed by a model's _scratch_key (a small int per model size, given when a model
# of a new size is made: _register), so the fast paths never miss: a list index costs
# ~5 ns, a dict lookup ~35 ns (measured in frame_placement's fast path)
HELD = []
HELD_F = []
SIZES = []          # key -> (njoints, nv)
_KEYS = {}          # (njoints, nv) -> key
_LOCAL = threading.local()      # .arrays: key -> this thread's workspace


def _register(model):
    """The model's scratch key, its size's HELD workspaces made if new (Model.cache: at
    construction and unpickling, in the process that uses the model)."""
    size = (model.njoints, model.nv)
    key = _KEYS.get(size)
    if key is None:
        with _LOCK:             # models may be made on several threads at once
            key = _KEYS.get(size)
            if key is None:
                ws, F = single_call_scratch(*size)
                HELD.append(ws)
                HELD_F.append(F)
                SIZES.append(size)
                key = _KEYS[size] = len(SIZES) - 1
    return key


_LOCK = threading.Lock()


def thread_workspace(model):
    """This thread's float64 workspace (njoints + nv, W_WIDTH) for ``model``'s size, for
    entries that release the GIL."""
    key = model._scratch_key
    try:
        return _LOCAL.arrays[key]
    except AttributeError:
        _LOCAL.arrays = {}
    except KeyError:
        pass
    ws = _LOCAL.arrays[key] = single_call_scratch(*SIZES[key], forces=False)[0]
    return ws


def model_table(tables, model, most):
    """``tables[model's content digest]``, a dict made on first use: a memo of what the
    layers above derive per model (batch plans, packed contact tables), kept here and not
    on the Model; past ``most`` models all are forgotten at once."""
    table = tables.get(model._digest)
    if table is None:
        if len(tables) >= most:
            tables.clear()
        table = tables.setdefault(model._digest, {})
    return table


Model.cache("_scratch_key", _register)     # a constant: the key, not the scratch
Model.cache("_sstate", lambda m: (m.njoints + m.nv, STATE_WIDTH))   # a kinematics state
