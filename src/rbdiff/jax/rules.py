"""The custom_jvp rules: rbdiff's analytical derivative kernels as JAX derivatives.

Every function reads q through the retraction (quaternions and (cos, sin) pairs
normalised), so its derivative in the ambient q is rbdiff's tangent derivative times
e = tangent_of_ambient(model, q, dq) (rbdiff.model.tangent) = T(q) dq, T a custom call
(tangent_map.py) whose own derivative is the jax.numpy map's: differentiating a rule
again differentiates e too, and the derivative functions used in
the rules carry their own rules from the second-order kernels, so Hessians are
analytical. Where rbdiff has no kernel for the next order, the rule raises.

Tensor conventions (rbdiff.second_order): T[i, j, k] = d (dF/dx_j)_i / dy_k, output first.
"""

import functools

import jax
import jax.numpy as jnp

from . import calls
from .contract import contract
from .tangent_map import tangent_matrix_function
from . import configuration
from .configuration import retract


def _mv(A, x):
    """A x as one custom call (contract.py: no XLA flops, so a small computation stays
    on the caller's thread instead of PjRt's asynchronous dispatch)."""
    return contract(A, x)


def _t(T, x):
    """T[..., i, j, k] x[..., k]: a tensor along a direction."""
    return jnp.einsum("...ijk,...k->...ij", T, x)


def _tj(T, x):
    """T[..., i, k, j] x[..., k]: a tensor along a direction in its middle index."""
    return jnp.einsum("...ikj,...k->...ij", T, x)


def _no_rule(what):
    """A custom_jvp rule that refuses: rbdiff has no kernel for this derivative."""
    def rule(primals, tangents):
        raise NotImplementedError(
            f"rbdiff.jax: {what} is not available: rbdiff has no analytical kernel for it "
            "(the front end differentiates only through rbdiff's kernels, never by tracing "
            "the algorithm)")
    return rule


def _hat_times(T, J, e):
    """dT = T [J e]^ for a body (local) twist J e = [linear, angular] (..., 4, 4)."""
    t = _mv(J, e)
    lin, w = t[..., :3], t[..., 3:]
    z = jnp.zeros_like(w[..., 0])
    K = jnp.stack([jnp.stack([z, -w[..., 2], w[..., 1], lin[..., 0]], -1),
                   jnp.stack([w[..., 2], z, -w[..., 0], lin[..., 1]], -1),
                   jnp.stack([-w[..., 1], w[..., 0], z, lin[..., 2]], -1),
                   jnp.stack([z, z, z, z], -1)], -2)
    return T @ K


class Rules:
    """The differentiable functions of one model (arrays already checked and broadcast:
    q (..., nq), v and u (..., nv), one float dtype)."""

    def __init__(self, model):
        self.model = m = model
        self._frames = {}

        # the retraction jitted as a unit (see integrate below)
        retract_m = jax.jit(functools.partial(retract, m))

        tangent_matrix = tangent_matrix_function(m)

        def e(q, dq):
            if m.nq == m.nv:       # revolute and prismatic joints only: the identity map
                return dq          # (nv slices and a stack fewer in every rule)
            # T(q) dq as custom calls (tangent_map.py, contract.py): the jax.numpy map
            # (``tangent``) costs XLA flops that send small computations asynchronous
            return contract(tangent_matrix(q), dq)

        def kernel(name, q, *rest, static=(), **contact):
            return calls.call(m, name, q if m.nq == m.nv else retract_m(q), *rest,
                              static=static, **contact)

        # ---- second order: the last kernels; a third derivative raises
        @jax.custom_jvp
        def rnea_so(q, v, a):
            return kernel("rnea_second_order_derivatives", q, v, a)
        rnea_so.defjvp(_no_rule("a third derivative of rnea"))

        @jax.custom_jvp
        def aba_so(q, v, tau):
            return kernel("aba_second_order_derivatives", q, v, tau)
        aba_so.defjvp(_no_rule("a third derivative of aba"))

        # ---- first order: value and partials in one kernel call; rules from second order
        @jax.custom_jvp
        def rnea_d(q, v, a):
            """(tau, dtau_dq, dtau_dv, M)."""
            return kernel("rnea_derivatives", q, v, a)

        @rnea_d.defjvp
        def _(primals, tangents):
            (q, v, a), (dq, dv, da) = primals, tangents
            tau, Dq, Dv, M = out = rnea_d(q, v, a)
            Q, V, X, dM = rnea_so(q, v, a)
            eq = e(q, dq)
            return out, (_mv(Dq, eq) + _mv(Dv, dv) + _mv(M, da),
                         _t(Q, eq) + _t(X, dv) + _tj(dM, da),    # d(dtau_dq)/da = dM_dq[i,k,j]
                         _tj(X, eq) + _t(V, dv),
                         _t(dM, eq))

        @jax.custom_jvp
        def aba_d(q, v, tau):
            """(qdd, dqdd_dq, dqdd_dv, Minv)."""
            return kernel("aba_derivatives", q, v, tau)

        @aba_d.defjvp
        def _(primals, tangents):
            (q, v, tau), (dq, dv, dtau) = primals, tangents
            qdd, Dq, Dv, Minv = out = aba_d(q, v, tau)
            Q, V, X, T = aba_so(q, v, tau)
            eq = e(q, dq)
            return out, (_mv(Dq, eq) + _mv(Dv, dv) + _mv(Minv, dtau),
                         _t(Q, eq) + _t(X, dv) + _tj(T, dtau),   # d2qdd/dq_j dtau_k = T[i,k,j]
                         _tj(X, eq) + _t(V, dv),
                         _t(T, eq))

        @jax.custom_jvp
        def crba_d(q):
            """(M, dM_dq)."""
            return kernel("crba_derivatives", q)
        crba_d.defjvp(_no_rule("a second derivative of crba (or minverse)"))

        # ---- the functions
        @jax.custom_jvp
        def rnea(q, v, a):
            return kernel("rnea", q, v, a)[0]

        @rnea.defjvp
        def _(primals, tangents):
            (q, v, a), (dq, dv, da) = primals, tangents
            tau, Dq, Dv, M = rnea_d(q, v, a)
            return tau, _mv(Dq, e(q, dq)) + _mv(Dv, dv) + _mv(M, da)

        @jax.custom_jvp
        def aba(q, v, tau):
            return kernel("aba", q, v, tau)[0]

        @aba.defjvp
        def _(primals, tangents):
            (q, v, tau), (dq, dv, dtau) = primals, tangents
            qdd, Dq, Dv, Minv = aba_d(q, v, tau)
            return qdd, _mv(Dq, e(q, dq)) + _mv(Dv, dv) + _mv(Minv, dtau)

        @jax.custom_jvp
        def nonlinear_effects(q, v):
            return kernel("nonlinear_effects", q, v)[0]

        @nonlinear_effects.defjvp
        def _(primals, tangents):
            (q, v), (dq, dv) = primals, tangents
            h, Dq, Dv, _M = rnea_d(q, v, jnp.zeros_like(v))
            return h, _mv(Dq, e(q, dq)) + _mv(Dv, dv)

        @jax.custom_jvp
        def gravity(q):
            return kernel("gravity", q)[0]

        @gravity.defjvp
        def _(primals, tangents):
            (q,), (dq,) = primals, tangents
            z = jnp.zeros(q.shape[:-1] + (m.nv,), q.dtype)
            g, Dq, _Dv, _M = rnea_d(q, z, z)
            return g, _mv(Dq, e(q, dq))

        @jax.custom_jvp
        def crba(q):
            return kernel("crba", q)[0]

        @crba.defjvp
        def _(primals, tangents):
            (q,), (dq,) = primals, tangents
            M, dM = crba_d(q)
            return M, _t(dM, e(q, dq))

        @jax.custom_jvp
        def minverse(q):
            return kernel("minverse", q)[0]

        @minverse.defjvp
        def _(primals, tangents):
            (q,), (dq,) = primals, tangents
            Minv = minverse(q)
            _M, dM = crba_d(q)
            return Minv, -Minv @ _t(dM, e(q, dq)) @ Minv

        self.rnea, self.aba, self.crba, self.minverse = rnea, aba, crba, minverse
        self.nonlinear_effects, self.gravity = nonlinear_effects, gravity
        self.rnea_d, self.aba_d, self.rnea_so, self.aba_so = rnea_d, aba_d, rnea_so, aba_so
        self._kernel, self._e, self.tangent_matrix = kernel, e, tangent_matrix
        # jitted as a unit: eagerly, JAX would compile each of their ~100 small ops on
        # its own (seconds on a first call); under an outer jit this is transparent
        self.integrate = jax.jit(functools.partial(configuration.integrate, m))
        self.difference = jax.jit(functools.partial(configuration.difference, m))

    def frame_placement(self, frame):
        """The differentiable placement (..., 4, 4) of frame index ``frame``."""
        f = self._frames.get(frame)
        if f is not None:
            return f
        kernel, e = self._kernel, self._e

        @jax.custom_jvp
        def placement_d(q):
            return kernel("frame_placement_derivatives", q, static=(frame,))
        placement_d.defjvp(_no_rule("a second derivative of frame_placement"))

        @jax.custom_jvp
        def placement(q):
            return kernel("frame_placement", q, static=(frame,))[0]

        @placement.defjvp
        def _(primals, tangents):
            (q,), (dq,) = primals, tangents
            T, J = placement_d(q)
            return T, _hat_times(T, J, e(q, dq))

        self._frames[frame] = placement
        return placement

    # ---- contact kinematics (issue 24): a value kernel and a partials kernel each (ffi.py:
    # the value and its true first partials, q in the tangent space, as
    # rbdiff.motion_partials); a second derivative raises

    def _contact(self, name, shape, static=()):
        """The differentiable function ``name`` of the per-item arrays (q first), of
        per-item ``shape``, with the frame options ``static``."""
        key = (name, static)
        f = self._frames.get(key)
        if f is not None:
            return f
        kernel, e = self._kernel, self._e

        @jax.custom_jvp
        def partials(q, *xs):
            return kernel(name + "_partials", q, *xs, static=static)
        partials.defjvp(_no_rule(f"a second derivative of {name}"))

        @jax.custom_jvp
        def f(q, *xs):
            return kernel(name, q, *xs, static=static)[0]

        @f.defjvp
        def _(primals, tangents):
            (q, *xs), (dq, *dxs) = primals, tangents
            out, *D = partials(q, *xs)
            t = _apply(D[0], e(q, dq))
            for Dk, dx in zip(D[1:], dxs):
                t = t + _apply(Dk, dx)
            return out, t

        self._frames[key] = f
        return f

    def frame_velocity(self, frame, reference):
        """reference: the kernel code (results.REFERENCE_CODES)."""
        return self._contact("frame_velocity", (6,), (frame, reference))

    def frame_acceleration(self, frame, reference, classical):
        return self._contact("frame_acceleration", (6,), (frame, reference, int(classical)))

    def center_of_mass(self):
        return self._contact("center_of_mass", (3,))

    def centroidal_momentum(self):
        return self._contact("centroidal_momentum", (6,))

    def kinetic_energy(self):
        return self._contact("kinetic_energy", ())

    def potential_energy(self):
        """V(q); its gradient is gravity(q) (the rule above, itself differentiable with
        rnea's kernels), so its Hessian is analytical too."""
        f = self._frames.get("potential_energy")
        if f is not None:
            return f
        kernel, e, gravity = self._kernel, self._e, self.gravity

        @jax.custom_jvp
        def f(q):
            return kernel("potential_energy", q)[0]

        @f.defjvp
        def _(primals, tangents):
            (q,), (dq,) = primals, tangents
            return f(q), _apply(gravity(q), e(q, dq))

        self._frames["potential_energy"] = f
        return f


def _apply(D, x):
    """D (..., *s, nv) x (..., nv) -> (..., *s): a Jacobian (s = (m,)) or a gradient
    (s = ()) along a tangent, as one custom call."""
    if D.ndim == x.ndim:
        return _mv(D[..., None, :], x)[..., 0]
    return _mv(D, x)
