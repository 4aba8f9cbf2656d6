"""Frames and joints by name or index: the one resolver every public function uses
(a name gives KeyError naming close matches; an index is range-checked)."""

import operator


def _lookup(ids, key, by_name, expected):
    """(index, True) for a key the table ``ids`` holds or a name ``by_name`` resolves
    (KeyError naming close matches), (operator.index(key), False) for another integer;
    TypeError ``expected`` otherwise. The callers range-check the second kind."""
    try:
        k = ids.get(key)                     # what the fast paths accept
    except TypeError:                        # unhashable
        k = None
    if k is not None:
        return k, True
    if isinstance(key, str):
        return by_name(key), True
    try:
        return operator.index(key), False
    except TypeError:
        raise TypeError(f"{expected}, got {key!r}") from None


def frame_index(model, frame):
    """Index into model.frames of ``frame``: a name (model.get_frame_id: KeyError naming
    close matches) or an index (negative ones count from the end)."""
    k, found = _lookup(model._frame_ids, frame, model.get_frame_id,
                       "frame: expected a frame name or an index into model.frames")
    if found:
        return k
    n = len(model.frames)
    if not -n <= k < n:
        raise IndexError(f"frame: index {k} out of range for the {n} frames of the model")
    return k % n


def joint_index(model, joint):
    """Index (1..njoints-1) of ``joint``: a name or an index."""
    k, found = _lookup(model._joint_ids, joint, model.get_joint_id,
                       "joint: expected a joint name or an index 1..njoints-1")
    if found:
        return k
    raise IndexError(f"joint: index {k} out of range 1..{model.njoints - 1} (joint 0, the "
                     "universe, does not move)")
