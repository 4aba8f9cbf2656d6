"""Derivatives of the centroidal momentum hg(q, v) and of its rate dhg(q, v, a) (Pinocchio's
computeCentroidalDynamicsDerivatives: dh_dq, dhdot_dq, dhdot_dv, dhdot_da), analytical,
in one forward and one backward pass, O(N + nv) work besides the outputs.

World frame (centroidal.py's glossary; rnea_chain_rule.py's for the derivative rules). A
dof m of joint j, with world column xi = S_m and lambda = j's parent, moves j's subtree
rigidly: for a body i in it, dY_i/dq_m = xi x* Y_i - Y_i xi x, and (kinematics_derivatives.py)
  dv_i/dq_m  = xi x (v_i - v_lambda)
  da_i/dq_m  = xi x (a_i - a_lambda) + u x (v_i - v_lambda),       u = v_lambda x xi
  da_i/dqd_m = (v_j + v_lambda - v_i) x xi.
Each is the rigid-motion rate (xi x v_i, xi x a_i) plus a part common to the subtree, so
with the body rates h_i = Y_i v_i, f_i = Y_i a_i + v_i x* h_i and Ydot_i = v_i x* Y_i -
Y_i v_i x (spatial.inertia_rate), summed over j's subtree into IC_j, HC_j, FC_j and
IDC_j (the backward pass), the derivatives of hO and fO (about the world origin) are
  dhO/dq_m = xi x* HC_j + IC_j u
  dfO/dq_m = xi x* FC_j + IC_j (a_lambda x xi + v_lambda x u) + IDC_j u + u x* HC_j
  dfO/dv_m = IC_j ((v_j + v_lambda) x xi) + IDC_j xi + xi x* HC_j
  dfO/da_m = dhO/dv_m = IC_j xi
(the identity v x* Y w - Y (v x w) = Ydot w gathers the body terms). Moving a force
[l; n] to the com c, n_G = n - c x l, with c depending on q (dc/dq_m = [IC_j xi]_lin / M,
the com Jacobian), adds -dc/dq_m x l to the q-derivatives' angular rows, l the total
linear momentum (for hg) or its rate (for dhg).
"""

from ..model.layout import MI_IV, MI_NV, MI_PARENT
from .centroidal import at_com, cross3, motion_pass, total_first_moment
from .spatial import inertia_rate
from .fk import world_body_inertia
from .jit import helper, kernel
from .kinematics_derivatives import store_column
from .rnea_chain_rule import acc6, fcr, ld6, ld13, mcr, st6, tadd, ymul
from .spatial import add13
from .workspace import D_S, W_A, W_F, W_IA, W_V, W_Y

# joint rows: IC in W_Y (13), HC in W_F (6), FC and IDC (6 + 13) in the articulated-inertia
# columns (free here)
W_HC = W_F
W_FC = W_IA
W_IDC = W_IA + 6


@helper
def body_rates(i, ws):
    """h_i, f_i and Ydot_i of body i into its rows (after its motion and Y_i)."""
    Y = ld13(ws[i, W_Y:W_Y + 13])
    vi = ld6(ws[i, W_V:W_V + 6])
    hi = ymul(Y, vi)
    st6(hi, ws[i, W_HC:W_HC + 6])
    st6(tadd(ymul(Y, ld6(ws[i, W_A:W_A + 6])), fcr(vi, hi)), ws[i, W_FC:W_FC + 6])
    st13(inertia_rate(Y, vi), ws[i, W_IDC:W_IDC + 13])


@helper
def st13(t, x):
    """x = t for a 13-tuple (constant indices: its entries' types may differ, as float32
    and float64 under float32 inputs)."""
    x[0] = t[0]
    x[1] = t[1]
    x[2] = t[2]
    x[3] = t[3]
    x[4] = t[4]
    x[5] = t[5]
    x[6] = t[6]
    x[7] = t[7]
    x[8] = t[8]
    x[9] = t[9]
    x[10] = t[10]
    x[11] = t[11]
    x[12] = t[12]


@helper
def less_cross(n, a, b):
    """The 6-tuple n with a x b taken from its angular half."""
    x = cross3(a, b)
    return (n[0], n[1], n[2], n[3] - x[0], n[4] - x[1], n[5] - x[2])


@helper
def joint_columns(mi, i, ws, c, inv, P, Pd, dh_dq, dhdot_dq, dhdot_dv, dhdot_da):
    """The four columns of joint i's dofs (its subtree sums complete in row i)."""
    n = mi[0, 0]
    lam = mi[i, MI_PARENT]
    IC = ld13(ws[i, W_Y:W_Y + 13])
    IDC = ld13(ws[i, W_IDC:W_IDC + 13])
    HC = ld6(ws[i, W_HC:W_HC + 6])
    FC = ld6(ws[i, W_FC:W_FC + 6])
    vl = ld6(ws[lam, W_V:W_V + 6])
    al = ld6(ws[lam, W_A:W_A + 6])
    vjl = tadd(ld6(ws[i, W_V:W_V + 6]), vl)
    iv = mi[i, MI_IV]
    for d in range(iv, iv + mi[i, MI_NV]):
        xi = ld6(ws[n + 1 + d, D_S:D_S + 6])
        ag = ymul(IC, xi)
        dc = (ag[0] * inv, ag[1] * inv, ag[2] * inv)
        u = mcr(vl, xi)
        dhq = tadd(fcr(xi, HC), ymul(IC, u))
        dfq = tadd(tadd(fcr(xi, FC), ymul(IC, tadd(mcr(al, xi), mcr(vl, u)))),
                   tadd(ymul(IDC, u), fcr(u, HC)))
        dfv = tadd(tadd(ymul(IC, mcr(vjl, xi)), ymul(IDC, xi)), fcr(xi, HC))
        store_column(less_cross(at_com(c, dhq), dc, P), dh_dq, d)
        store_column(less_cross(at_com(c, dfq), dc, Pd), dhdot_dq, d)
        store_column(at_com(c, dfv), dhdot_dv, d)
        store_column(at_com(c, ag), dhdot_da, d)


@kernel
def centroidal_dynamics_derivatives(mi, mf, q, v, a, ws, dh_dq, dhdot_dq, dhdot_dv,
                                    dhdot_da):
    """dh_dq, dhdot_dq, dhdot_dv, dhdot_da (6, nv) each, every entry written (dhdot_da is
    Ag). Forward pass: motion without gravity and each body's Y, h, f, Ydot; backward
    pass: each joint's columns from its subtree sums, then the sums to its parent."""
    n = mi[0, 0]
    motion_pass(mi, mf, q, v, a, ws)
    z = 0.0 * ws[0, W_V]
    P = (z, z, z)           # total linear momentum and its rate
    Pd = (z, z, z)
    for i in range(1, n + 1):
        world_body_inertia(mf, i, ws)
        body_rates(i, ws)
        P = (P[0] + ws[i, W_HC], P[1] + ws[i, W_HC + 1], P[2] + ws[i, W_HC + 2])
        Pd = (Pd[0] + ws[i, W_FC], Pd[1] + ws[i, W_FC + 1], Pd[2] + ws[i, W_FC + 2])
    m, H = total_first_moment(mi, mf, ws)
    inv = 1.0 / m
    c = (H[0] * inv, H[1] * inv, H[2] * inv)
    for i in range(n, 0, -1):
        joint_columns(mi, i, ws, c, inv, P, Pd, dh_dq, dhdot_dq, dhdot_dv, dhdot_da)
        lam = mi[i, MI_PARENT]
        if lam > 0:
            add13(ws[i, W_Y:W_Y + 13], ws[lam, W_Y:W_Y + 13])
            add13(ws[i, W_IDC:W_IDC + 13], ws[lam, W_IDC:W_IDC + 13])
            acc6(ld6(ws[i, W_HC:W_HC + 6]), ws[lam, W_HC:W_HC + 6])
            acc6(ld6(ws[i, W_FC:W_FC + 6]), ws[lam, W_FC:W_FC + 6])
