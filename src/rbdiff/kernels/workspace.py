"""Workspace layout: one scalar-typed 2-D array per call, rows 0..N for joints (row 0 the
universe) and rows N+1..N+nv for dofs. Column offsets are module constants.

Joint rows:  R, P (world placement oMi), V, A (spatial velocity/acceleration), F (force),
             all in the world frame except in RNEA, which keeps them in the joint frame
             (the world origin at the root free flyer in the kernels whose results do
             not depend on it: row 0's P is then -p_base, fk.init_universe_at_base);
             Y (world body or composite inertia, compact), LR, LP (placement in the parent
             frame), VJ (S qd), T (scratch), IA (articulated inertia 6x6),
             PA (articulated bias force), C (bias acceleration), D = S^T U and DINV
             (nv_i x nv_i, row-major).
Dof rows:    S (world motion subspace column), U (column of IA S), UDINV (column of
             U D^-1), UU (u = tau - S^T pA), T (6-vector scratch).
"""


from .jit import helper

W_R = 0
W_P = 9
W_V = 12
W_A = 18
W_F = 24
W_Y = 30
W_LR = 43
W_LP = 52
W_VJ = 55
W_T = 61            # 9 wide: a 6-vector, or the joint rotation while placing a joint
W_IA = 70
W_PA = 106
W_C = 112
W_D = 118
W_DINV = 154
W_WIDTH = 190

D_S = 0
D_U = 6
D_UDINV = 12
D_UU = 18
D_T = 19
D_WIDTH = 25


@helper
def workspace_rows(mi):
    return mi[0, 0] + 1 + mi[0, 2]
