"""bench-core pairs of the front ends' contact kinematics derivatives (rbdiff.jax,
rbdiff.torch): one front-end derivative call against the Pinocchio sequence that computes
the same partials (bench/core.py's PAIR_MODULES convention: ``calls(model, pm, q, v, a)``).

- "jax.jacrev(...)": jax.jit(jax.jacrev(f, argnums=...)) of the function at the contact
  frame (core_frame_motion.contact_frame), "local" reference (where Pinocchio's getters
  are the true derivatives), Jacobians concatenated along the last axis inside the jit;
  a call blocks until the result is ready.
- "torch.<f>+backward": the forward of a weighted sum of the output and its backward
  (q.grad, v.grad), what a learning loop runs.
- Pinocchio: compute + getters (computeForwardKinematicsDerivatives +
  getFrame*Derivatives, jacobianCenterOfMass, computeCentroidalDynamicsDerivatives,
  computeGeneralizedGravity; for the kinetic energy's gradient, which Pinocchio has no
  getter for, the same route as rbdiff's: computeRNEADerivatives(q, 0, v) less
  computeGeneralizedGravityDerivatives, contracted with v, and M v), plus the weighted
  sum for the torch rows. Its tangent
  q-derivatives are mapped to the ambient coordinates the front ends differentiate in
  (rbdiff.model.tangent.tangent_of_ambient) in ``post``, which is not timed.
Rows are left out when JAX or PyTorch is not installed.
"""

from functools import partial

import numpy as np

from rbdiff.bench.core_frame_motion import contact_frame
from rbdiff.model.tangent import tangent_of_ambient

try:
    import pinocchio as pin
except ImportError:
    pin = None


def _tangent_map(model, q):
    """T (nv, nq): e = T dq (the ambient-to-tangent map at q)."""
    return np.stack(tangent_of_ambient(model, q, np.eye(model.nq)), -1).T


def _jax_rows(model, q, v, a, name):
    try:
        import jax
    except ImportError:
        return {}
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    import rbdiff.jax as rj

    def jac(f, argnums):
        g = jax.jit(lambda *x: jnp.concatenate(jax.jacrev(f, argnums=argnums)(*x), -1))
        return lambda *x: jax.block_until_ready(g(*x))

    qj, vj, aj = (jnp.asarray(x) for x in (q, v, a))
    fv = lambda q_, v_: rj.frame_velocity(model, q_, v_, name, "local")
    fa = lambda q_, v_, a_: rj.frame_acceleration(model, q_, v_, a_, name, "local")
    com = lambda q_: rj.center_of_mass(model, q_)
    h = lambda q_, v_: rj.centroidal_momentum(model, q_, v_)
    pe = lambda q_: rj.potential_energy(model, q_)[None]
    ke = lambda q_, v_: rj.kinetic_energy(model, q_, v_)[None]
    return {"jax.jacrev(frame_velocity)": partial(jac(fv, (0, 1)), qj, vj),
            "jax.jacrev(frame_acceleration)": partial(jac(fa, (0, 1, 2)), qj, vj, aj),
            "jax.jacrev(center_of_mass)": partial(jac(com, (0,)), qj),
            "jax.jacrev(centroidal_momentum)": partial(jac(h, (0, 1)), qj, vj),
            "jax.grad(potential_energy)": partial(jac(pe, (0,)), qj),
            "jax.grad(kinetic_energy)": partial(jac(ke, (0, 1)), qj, vj)}


def _torch_rows(model, q, v, a, name):
    try:
        import torch
    except ImportError:
        return {}
    import rbdiff.torch as rt

    w = torch.linspace(-1.0, 1.0, 6, dtype=torch.float64)

    def fb(f, n):
        xs = [torch.tensor(x, requires_grad=True) for x in (q, v, a)[:n]]

        def run():
            for x in xs:
                x.grad = None
            (f(*xs) * w).sum().backward()
            return np.concatenate([x.grad.numpy() for x in xs])
        return run

    fv = lambda q_, v_: rt.frame_velocity(model, q_, v_, name, "local")
    h = lambda q_, v_: rt.centroidal_momentum(model, q_, v_)
    return {"torch.frame_velocity+backward": fb(fv, 2),
            "torch.centroidal_momentum+backward": fb(h, 2)}


def _theirs(model, pm, q, v, a, fid):
    pd = pm.createData()
    T = _tangent_map(model, q)
    w = np.linspace(-1.0, 1.0, 6)

    def ambient(J, n_other=0):
        """[d/dq (tangent) | others] -> [d/dq (ambient) | others]."""
        J = np.array(J)
        return np.concatenate([J[..., :model.nv] @ T, J[..., model.nv:]], -1)

    def fv_d():
        pin.computeForwardKinematicsDerivatives(pm, pd, q, v, a)
        return pin.getFrameVelocityDerivatives(pm, pd, fid, pin.LOCAL)

    def fa_d():
        pin.computeForwardKinematicsDerivatives(pm, pd, q, v, a)
        return pin.getFrameAccelerationDerivatives(pm, pd, fid, pin.LOCAL)[1:]

    def h_d():
        d = pin.computeCentroidalDynamicsDerivatives(pm, pd, q, v, np.zeros(model.nv))
        return d[0], d[3]         # dh_dq, dhdot_da = Ag

    def gravity():
        return pin.computeGeneralizedGravity(pm, pd, q)

    def ke_gradient():
        dtau_dq, _, M = pin.computeRNEADerivatives(pm, pd, q, np.zeros(model.nv), v)
        dg = pin.computeGeneralizedGravityDerivatives(pm, pd, q)
        M = np.triu(M) + np.triu(M, 1).T
        return np.concatenate([0.5 * v @ (dtau_dq - dg), M @ v])

    def fv_backward():
        pin.forwardKinematics(pm, pd, q, v)
        pin.getFrameVelocity(pm, pd, fid, pin.LOCAL)
        dq, dv = fv_d()
        return np.concatenate([w @ dq, w @ dv])

    def h_backward():
        pin.computeCentroidalMomentum(pm, pd, q, v)
        dq, Ag = h_d()
        return np.concatenate([w @ dq, w @ Ag])

    cat = lambda d: ambient(np.concatenate([np.array(x) for x in d], -1))
    qamb = lambda g: np.concatenate([g[:model.nv] @ T, g[model.nv:]])
    return {"jax.jacrev(frame_velocity)": (fv_d, cat),
            "jax.jacrev(frame_acceleration)": (fa_d, cat),
            "jax.jacrev(center_of_mass)": (
                partial(pin.jacobianCenterOfMass, pm, pd, q), lambda J: ambient(J)),
            "jax.jacrev(centroidal_momentum)": (h_d, cat),
            "jax.grad(potential_energy)": (gravity, lambda g: ambient(np.array(g)[None])),
            "jax.grad(kinetic_energy)": (ke_gradient, lambda g: ambient(g[None])),
            "torch.frame_velocity+backward": (fv_backward, qamb),
            "torch.centroidal_momentum+backward": (h_backward, qamb)}


def calls(model, pm, q, v, a):
    """{name: (rbdiff call, Pinocchio call or None, post)}."""
    fid = contact_frame(model)
    name = model.frames[fid].name
    ours = {**_jax_rows(model, q, v, a, name), **_torch_rows(model, q, v, a, name)}
    if pm is None:
        return {k: (f, None, None) for k, f in ours.items()}
    theirs = _theirs(model, pm, q, v, a, fid)
    return {k: (f, *theirs[k]) for k, f in ours.items()}
