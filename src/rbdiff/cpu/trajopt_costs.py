"""Entry point of the trajectory-optimisation cost kernels (kernels/trajopt_costs.py).
No math."""

from ..kernels.jit import entry
from ..kernels.trajopt_costs import placement_log


@entry
def placement_log_batch(R, p, Rref, pref, r, Jl):
    """r (K, 6), Jl (K, 6, 6) of the placements (R (K, 3, 3), p (K, 3)) relative to the
    references (Rref (K, 3, 3), pref (K, 3)); the caller checks shapes and finiteness."""
    placement_log(R, p, Rref, pref, r, Jl)
