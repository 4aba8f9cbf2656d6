"""Vector-Jacobian products of the dynamics for the front ends' backward passes.

A front end (rbdiff.torch) evaluates f(retract(q), v, u) with q in its ambient layout;
its backward needs, for an output cotangent g (nv,), the input cotangents

    q: T(q)^T (J_q^T g) (nq,),   v: J_v^T g (nv,),   u: J_u^T g (nv,)

with J_q, J_v, J_u the partial derivatives (rnea_derivatives or aba_derivatives, J_q
in the tangent space) and T(q) the ambient-to-tangent map (kernels.configuration's
tangent_vjp applies its transpose)."""

from .configuration import tangent_vjp
from .jit import helper


@helper
def vector_times(g, J, out, o):
    """out[o:o+n] = J^T g for J (m, n), g (m,): row by row, so every inner loop runs along
    a contiguous row of J."""
    n = J.shape[1]
    for c in range(n):
        out[o + c] = 0.0
    for r in range(J.shape[0]):
        gr = g[r]
        for c in range(n):
            out[o + c] += gr * J[r, c]


@helper
def dynamics_vjp(mi, q, g, D, grad):
    """grad (nq + 2 nv) = [T(q)^T J_q^T g, J_v^T g, J_u^T g] from D[0], D[1], D[2] =
    J_q, J_v, J_u (nv, nv); D[3, 0] (nv,) is scratch."""
    nq = mi[0, 1]
    nv = mi[0, 2]
    w = D[3, 0]
    vector_times(g, D[0], w, 0)
    vector_times(g, D[1], grad, nq)
    vector_times(g, D[2], grad, nq + nv)
    tangent_vjp(mi, q, w, grad)
