"""rbdiff for PyTorch: rigid-body dynamics whose derivatives are rbdiff's analytical
kernels (torch.autograd.Function with backward, jvp and vmap rules).

    import rbdiff as rbd, rbdiff.torch as rt
    tau = rt.rnea(model, q, v, a)       # q (..., nq) ambient, v, a (..., nv): tensors

Functions (model first, then tensors, as the NumPy API): rnea, aba, crba, minverse,
nonlinear_effects, gravity, integrate, difference, frame_placement, and the contact
kinematics frame_velocity, frame_acceleration (classical too), center_of_mass (of q),
centroidal_momentum, potential_energy, kinetic_energy, contact_dynamics(model, q, v, tau,
contacts) -> (qdd, forces) and impulse_dynamics(model, q, v_before, contacts,
restitution=0.0) -> (v_after, impulses) (without damping or fext, as rbdiff.jax's). They
work under
torch.autograd (backward, double backward, forward AD) and torch.func (grad, jacrev,
jacfwd, jvp, vjp, vmap, hessian):
- derivatives: backward and jvp use rnea_derivatives / aba_derivatives (and dM/dq,
  dMinv/dq from the second-order kernels for crba, minverse); second derivatives
  (double backward, hessian) use rnea_second_order_derivatives /
  aba_second_order_derivatives. Where rbdiff has no kernel for the order asked (third
  derivatives; second derivatives of crba, minverse, frame_placement and of the contact
  kinematics but potential_energy, and of contact_dynamics and impulse_dynamics) a
  RuntimeError says so rather than returning zeros. contact_dynamics' and
  impulse_dynamics' first derivatives are rbd.contact_dynamics_derivatives' and
  rbd.impulse_dynamics_derivatives'.
  The contact kinematics' first derivatives come from rbdiff.motion_partials: the true
  derivatives of the returned values (in "local_world_aligned" not Pinocchio's
  origin-fixed getters).
- q is taken in its ambient layout (nq). A function of q is evaluated at retract(q)
  (every quaternion and (cos, sin) pair divided by its norm), and its derivative in q is
  rbdiff's tangent derivative composed with the derivative of that retraction
  (rbdiff.model.tangent), so it is right off the manifold too, and
  jacfwd(lambda dq: f(integrate(model, q, dq)))(zeros(nv)) is rbdiff's tangent
  derivative.
- batches: any leading shape (the same on every tensor argument) runs as one batched
  rbdiff call; torch.func.vmap (nested too) becomes one batched call as well.
- dtype: float64, or float32 (computed in float64 by rbdiff and cast back to float32).
- device: CPU tensors. CUDA tensors raise an error for now (the rbdiff.gpu route is not
  verified; nothing is copied to the host silently). integrate and difference are plain
  torch ops and run anywhere.
- inputs may require grad; values are checked by the NumPy API (NaN, shapes) with errors
  naming the argument.
"""

try:
    import torch as _torch  # noqa: F401
except ImportError as e:        # pragma: no cover - exercised without torch installed
    raise ImportError("rbdiff.torch needs PyTorch: pip install 'rbdiff[torch]'") from e

from .api import aba
from .api import center_of_mass
from .api import centroidal_momentum
from .api import contact_dynamics
from .api import crba
from .api import frame_acceleration
from .api import frame_placement
from .api import frame_velocity
from .api import gravity
from .api import impulse_dynamics
from .api import kinetic_energy
from .api import minverse
from .api import nonlinear_effects
from .api import potential_energy
from .api import rnea
from .configuration import difference
from .configuration import integrate

__all__ = ["rnea", "aba", "crba", "minverse", "nonlinear_effects", "gravity", "integrate",
           "difference", "frame_placement", "frame_velocity", "frame_acceleration",
           "center_of_mass", "centroidal_momentum", "potential_energy", "kinetic_energy",
           "contact_dynamics", "impulse_dynamics"]
