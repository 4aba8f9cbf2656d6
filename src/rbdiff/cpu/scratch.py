"""Scratch of the single-call entries (cpu/single.py): allocated here, in the layer that
uses it, and owned by the entries, never by the Model (one model is shared by threads).

Two owners, by how the entry runs:

- ``HELD[model._scratch_key]``: the float64 workspace of the fast entries that hold the
  GIL for the whole call (kernels.jit.fast_entry: rnea, aba, crba, frames, centroidal,
  ...). No two threads can be inside such an entry at once, so one workspace per model
  size serves the process: one dictionary lookup (~10 ns on a ~1 us call).
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


def scratch_key(njoints, nv):
    """The key of a model size's workspaces in HELD, HELD_F and the per-thread ones."""
    return njoints << 20 | nv


def _sizes(key):
    return key >> 20, key & ((1 << 20) - 1)


def _workspace(key):
    njoints, nv = _sizes(key)
    return np.empty((njoints + nv, W_WIDTH))


def _forces(key):
    njoints, nv = _sizes(key)
    return np.empty((njoints, nv, 6))


# plain dicts (CPython specialises their lookup: ~10 ns), filled when a model of a new
# size is made (_register), so the fast paths never miss
HELD = {}
HELD_F = {}


class _PerThreadSize:
    """size key -> this thread's array, made on first use."""
    __slots__ = ("make", "local")

    def __init__(self, make):
        self.make = make
        self.local = threading.local()

    def __getitem__(self, key):
        try:
            return self.local.arrays[key]
        except AttributeError:
            self.local.arrays = {}
        except KeyError:
            pass
        a = self.local.arrays[key] = self.make(key)
        return a


_THREAD = _PerThreadSize(_workspace)


def _register(model):
    """The model's scratch key, its size's HELD workspaces made if new (Model.cache: at
    construction and unpickling, in the process that uses the model)."""
    key = scratch_key(model.njoints, model.nv)
    if key not in HELD:
        HELD_F.setdefault(key, _forces(key))
        HELD.setdefault(key, _workspace(key))
    return key


def thread_workspace(model):
    """This thread's float64 workspace (njoints + nv, W_WIDTH) for ``model``'s size, for
    entries that release the GIL."""
    return _THREAD[model._scratch_key]


Model.cache("_scratch_key", _register)     # a constant: the key, not the scratch
Model.cache("_sstate", lambda m: (m.njoints + m.nv, STATE_WIDTH))   # a kinematics state
