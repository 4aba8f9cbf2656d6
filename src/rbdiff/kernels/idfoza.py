"""IDFOZA, the inverse-dynamics first-order zero algorithm (Singh, Russell & Wensing 2023,
sec. VI-A, eq. 52): IDSVA's dtau/dq at zero velocity, zero gravity, no external force
and a = p is d/dq (M(q) p), because the bias forces vanish with v and g. Its entry
[i, k] is sum_l dM_il/dq_k p_l, so one call per column j of a matrix P gives column j of
FDSVA-SO's inner products (fdsva_so.py, eq. 46):

    swap23(D.P)[i, k, j] = (D.P)[i, j, k] = d/dq_k (M(q) P[:, j])_i,   D = dM/dq,

O(N + nnz(branch pattern)) per column (IDSVA's O(N d), d the depth), against the
O(nnz(D)) rows of length nv per matrix of the dense tensor-matrix route
(fdsva_so.tensor_matrix_t, DTM). ``idfoza_beats_dtm`` is the measured crossover.

The passes are idsva.py's, on a workspace whose world placements and S an earlier pass
left (fdsva_so's, after minverse): ``zero_motion`` clears velocities and the base
acceleration once, then each column runs IDSVA's forward steps without the placement
(``acceleration_joint`` with a = p, ``joint_dynamics`` without fext: Psid, Phi, BC
vanish, Psidd = a_parent x S, f = IC a) and ``idsva_backward_pass``.
"""

from ..model.layout import MI_IV, MI_NV, MI_NVSUB, MI_PARENT
from .aza import branch_pattern_nnz
from .fk import acceleration_joint
from .idsva import idsva_backward_pass, joint_dynamics
from .jit import helper, kernel
from .workspace import W_A, W_V, W_VJ

# IDFOZA when DTM's row updates (dtm_rows, nv vectorised multiply-adds each) exceed
# IDFOZA_FILL nnz(branch pattern) + IDFOZA_JOINT njoints: one IDFOZA column's cost (IDSVA's
# fill, O(d) per dof, and its passes, O(1) per joint) in DTM row-element updates. Fitted to
# the two inner kernels timed alone (interleaved, median of 11 rounds, 2 shared cores of
# an AMD EPYC, AVX-512, indicative): DTM ~0.25 ns per row element, IDFOZA ~5.5 ns per
# pattern entry and ~0.38 us per joint, per column. idfoza/dtm, inner kernel alone (whole
# FDSVA-SO call, three inner products, in parentheses): serial chains N = 10: 7.37 (2.38),
# 20: 4.70 (2.12), 30: 2.21 (1.37), 40: 1.79 (1.21), 50: 1.60 (1.06), 60: 1.05 (1.02),
# 80: 0.83 (0.97), 110: 0.53 (0.81): crossover N ~ 65; binary trees N = 15, 31, 63, 110:
# 17.4, 11.3, 9.45, 6.47 (1.18 whole): none; panda 7.78, hyq+ff 8.65, talos+ff 3.95: DTM.
# The whole call, in `python -m rbdiff bench --only second_order` (columns FDSVA-SO dtm and
# idfoza, two runs): chains N = 32: 0.92, 1.61; 50: 1.02, 1.06; 80: 0.92, 0.94; 110: 0.90,
# 0.89 (crossover N ~ 55, 63); binary trees up to N = 110: 1.2 to 4.0, none.
IDFOZA_FILL = 22
IDFOZA_JOINT = 1500


@helper
def dtm_rows(mi):
    """The number of rows D[i, l, k0:k1] that tensor_matrix_t reads (the nonzero entries
    of dM/dq), each one update of a row of length nv."""
    n = mi[0, 0]
    rows = 0
    for ji in range(1, n + 1):
        iv = mi[ji, MI_IV]
        nvi = mi[ji, MI_NV]
        end = iv + mi[ji, MI_NVSUB]
        jl = ji                                   # l on joint ji or above
        while jl > 0:
            rows += nvi * mi[jl, MI_NV] * (end - mi[jl, MI_IV] - mi[jl, MI_NV])
            jl = mi[jl, MI_PARENT]
        jl = ji + 1                               # l strictly below
        while jl <= n and mi[jl, MI_IV] < end:
            rows += nvi * mi[jl, MI_NV] * (mi[jl, MI_IV] + mi[jl, MI_NVSUB] - iv - nvi)
            jl += 1
    return rows


@helper
def idfoza_beats_dtm(mi):
    """True when IDFOZA's per-column passes cost less than DTM's row updates."""
    return dtm_rows(mi) > IDFOZA_FILL * branch_pattern_nnz(mi) + IDFOZA_JOINT * mi[0, 0]


@kernel
def zero_motion(mi, ws):
    """v = 0 and S qd = 0 on every joint row, and a zero base acceleration (no gravity)."""
    for i in range(mi[0, 0] + 1):
        ws[i, W_V:W_V + 6] = 0.0
        ws[i, W_VJ:W_VJ + 6] = 0.0
    ws[0, W_A:W_A + 6] = 0.0


@kernel
def idfoza(mi, mf, p, ws, G, Gv, Gm):
    """G[i, k] = d/dq_k (M(q) p)_i on the branch pattern (other entries untouched): IDSVA
    at v = 0, g = 0, a = p on a zero_motion workspace; Gv, Gm (nv, nv) scratch."""
    for i in range(1, mi[0, 0] + 1):
        acceleration_joint(mi, i, p, ws)
        joint_dynamics(mi, mf, i, None, ws)
    idsva_backward_pass(mi, ws, G, Gv, Gm)


@kernel
def idfoza_matrix_t(mi, mf, ws, P, G3, E):
    """E = swap23(D.P), E[i, k, j] = sum_l dM_il/dq_k P[l, j], by one IDFOZA call per
    column of P (nv, nv). ws (workspace_rows, >= IDSVA_WIDTH) holds world placements and
    S (its motion rows are overwritten); G3 (3, nv, nv) scratch."""
    nv = P.shape[0]
    zero_motion(mi, ws)
    G = G3[0]
    G[:, :] = 0.0           # idfoza writes the branch pattern only, the same every column
    for j in range(nv):
        idfoza(mi, mf, P[:, j], ws, G, G3[1], G3[2])
        for i in range(nv):
            for k in range(nv):
                E[i, k, j] = G[i, k]
