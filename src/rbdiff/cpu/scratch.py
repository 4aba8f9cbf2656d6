"""Scratch of the single-call entries (cpu/single.py): allocated here, in the layer
that uses it, not by the model. A model gets its float64 pair for the fast paths
(``model._ws``, ``model._F``) and the shape of a pending kinematics state
(``model._sstate``) when it is made, through Model.cache (model/model.py)."""

import numpy as np

from ..kernels.kinematics_derivatives import STATE_WIDTH
from ..kernels.workspace import W_WIDTH
from ..model.model import Model


def single_call_scratch(njoints, nv, dtype=np.float64, forces=True):
    """Scratch of a single call (cpu/single.py's ``*_one``): the workspace (njoints+nv,
    W_WIDTH) and, with ``forces``, M^-1's force scratch F (njoints, nv, 6), njoints
    counting the universe (model.njoints). The model keeps one float64 pair for the
    fast paths (api.py); the fast entries hold the GIL (jit.fast_entry), so two threads
    never run on it at once."""
    ws = np.empty((njoints + nv, W_WIDTH), dtype)
    return (ws, np.empty((njoints, nv, 6), dtype)) if forces else (ws,)


Model.cache("_ws", lambda m: single_call_scratch(m.njoints, m.nv, forces=False)[0])
Model.cache("_F", lambda m: np.empty((m.njoints, m.nv, 6)))
Model.cache("_sstate", lambda m: (m.njoints + m.nv, STATE_WIDTH))   # a kinematics state
