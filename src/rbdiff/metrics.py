"""Accuracy metrics of a computed derivative tensor x against a reference ref (Singh,
Russell & Wensing 2023, eqs. 40-43; the reference is usually a complex-step result):

    MAE   = max_k |x_k - ref_k|                              (40)
    RMSAE = sqrt(1/n sum_k (x_k - ref_k)^2)                  (41)
    MRE   = max_k |x_k - ref_k| / |ref_k|                    (42)
    RMSRE = sqrt(1/n sum_k (|x_k - ref_k| / |ref_k|)^2)      (43)

over all n entries (n = nv^3 for one (nv, nv, nv) tensor; any shape, batches included).
Relative errors are undefined where ref_k = 0: such entries (the structural zeros of a
tree's tensors, where branches do not meet) count with relative error 0 when x_k = 0 too
and with +inf otherwise, and stay in n, as in the paper (whose RMSRE is lower for binary
trees because of their zeros). Pass ``floor`` > 0 to divide by max(|ref_k|, floor)
instead, which bounds the relative error of entries whose reference is (nearly) zero:
an entry that is mathematically zero but computed as a sum that cancels to rounding
noise (|ref_k| ~ 1e-16 max|ref|) otherwise dominates MRE and RMSRE; floor =
1e-10 * np.abs(ref).max() is a common choice. When floor = 0 and a zero reference
entry meets a nonzero x_k, mre and rmsre return inf and warn (a RuntimeWarning saying
how many reference entries are exactly zero and pointing at ``floor=``).

    >>> from rbdiff import metrics
    >>> metrics.mae([1.5, -2.0], [1.0, -2.0]), metrics.mre([1.5, -2.0], [1.0, -2.0])
    (0.5, 0.5)
"""

import warnings

import numpy as np

__all__ = ["mae", "rmsae", "mre", "rmsre"]


def _pair(x, ref):
    x = np.asarray(x)
    ref = np.asarray(ref)
    if x.shape != ref.shape:
        raise ValueError(f"x and ref: shapes {x.shape} and {ref.shape} differ")
    if x.size == 0:
        raise ValueError("x and ref: empty arrays have no error")
    for name, a in (("x", x), ("ref", ref)):
        if a.dtype.kind not in "biufc":
            raise TypeError(f"{name}: expected a numeric array, got dtype {a.dtype}")
    return x, ref


def _relative(x, ref, floor, name):
    if floor < 0:
        raise ValueError(f"floor: expected >= 0, got {floor}")
    err = np.abs(x - ref).astype(np.float64)
    den = np.maximum(np.abs(ref).astype(np.float64), floor)
    out = np.zeros_like(err)
    nz = den > 0
    out[nz] = err[nz] / den[nz]
    undefined = ~nz & (err > 0)
    if undefined.any():
        out[undefined] = np.inf
        zeros = int(np.count_nonzero(~nz))
        warnings.warn(
            f"{name}: inf, because {zeros} of the {ref.size} reference entries are exactly "
            f"zero and x differs from them at {int(np.count_nonzero(undefined))} (a relative "
            "error is undefined there); pass floor= (e.g. floor=1e-10 * np.abs(ref).max()) "
            "to divide by max(|ref|, floor) instead", RuntimeWarning, stacklevel=3)
    return out


def mae(x, ref):
    """Maximum absolute error max |x - ref| (singh-2023 eq. 40)."""
    x, ref = _pair(x, ref)
    return float(np.max(np.abs(x - ref)))


def rmsae(x, ref):
    """Root-mean-square absolute error sqrt(mean((x - ref)^2)) over all entries (eq. 41)."""
    x, ref = _pair(x, ref)
    return float(np.sqrt(np.mean(np.abs(x - ref) ** 2)))


def mre(x, ref, floor=0.0):
    """Maximum relative error max |x - ref| / |ref| (eq. 42); entries with ref = 0 count
    0 where x = 0 and inf elsewhere (with a RuntimeWarning naming floor=), or divide by
    max(|ref|, floor) when floor > 0."""
    x, ref = _pair(x, ref)
    return float(np.max(_relative(x, ref, floor, "mre")))


def rmsre(x, ref, floor=0.0):
    """Root-mean-square relative error sqrt(mean((|x - ref| / |ref|)^2)) over all
    entries (eq. 43); zeros of ref as in mre."""
    x, ref = _pair(x, ref)
    return float(np.sqrt(np.mean(_relative(x, ref, floor, "rmsre") ** 2)))
