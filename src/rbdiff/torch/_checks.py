"""Input checks of rbdiff.torch: tensors, one float dtype, CPU, trailing lengths, one
leading (batch) shape. Values (NaN, zero quaternions) are checked by rbdiff's NumPy API
inside the rules' forward, where the tensors are concrete (not torch.func wrappers)."""

import torch

_FLOATS = (torch.float32, torch.float64)


def check(model, named, any_device=False):
    """named: [(name, tensor, "nq" or "nv")]. Returns the common leading shape (any_device: skip
    the CPU check and the leading-shape match, for the pure-torch functions)."""
    if not hasattr(model, "nq") or not hasattr(model, "joint_types"):
        raise TypeError(f"model: expected an rbdiff Model (rbd.load_robot, rbd.load_urdf, "
                        f"...), got {type(model).__name__}")
    first = None
    for name, x, n in named:
        n = getattr(model, n)
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__} "
                            "(use rbdiff's NumPy API for arrays, or torch.as_tensor)")
        if x.dtype not in _FLOATS:
            raise TypeError(f"{name}: expected dtype float32 or float64, got {x.dtype}")
        if not (x.is_cpu or any_device):
            raise ValueError(f"{name}: on device {x.device}; rbdiff.torch runs CPU tensors "
                             "only for now (its rbdiff.gpu path is not verified yet, and it "
                             "does not copy to the host silently): pass x.cpu()")
        if x.dim() < 1 or x.shape[-1] != n:
            raise ValueError(f"{name}: expected shape (..., {n}), got {tuple(x.shape)}")
        if first is None:
            first = (name, x)
            continue
        if x.dtype != first[1].dtype:
            raise TypeError(f"{name}: dtype {x.dtype} differs from {first[0]}'s "
                            f"{first[1].dtype}")
        if x.shape[:-1] != first[1].shape[:-1] and not any_device:
            raise ValueError(f"{name}: leading (batch) shape {tuple(x.shape[:-1])} differs "
                             f"from {first[0]}'s {tuple(first[1].shape[:-1])}")
    return first[1].shape[:-1]
