"""Row operations: sums of scaled rows into one or two output rows, on 1-D row views, four
input rows a pass (a pass per input row loads and stores the output row four times as
often; 2-D indexing with offsets was not vectorised). Shared by the contact dynamics'
triangular solves and products, aba_derivatives' branch sums and trajopt's backward
pass."""

from .jit import helper


@helper
def add_rows4(c, x0, x1, x2, x3, a0, a1, a2, a3):
    """c += a0 x0 + a1 x1 + a2 x2 + a3 x3 over c's length (1-D row views): four rows a
    pass over c (a pass a row loads and stores c four times as often)."""
    for j in range(c.shape[0]):
        c[j] += a0 * x0[j] + a1 * x1[j] + a2 * x2[j] + a3 * x3[j]


@helper
def add_rows4x2(c, d, x0, x1, x2, x3, a0, a1, a2, a3, b0, b1, b2, b3):
    """c += a0 x0 + ... + a3 x3 and d += b0 x0 + ... + b3 x3 over c's length: two output
    rows a pass over four rows x (each x row loaded once for both: ~20% faster)."""
    for j in range(c.shape[0]):
        y0, y1, y2, y3 = x0[j], x1[j], x2[j], x3[j]
        c[j] += a0 * y0 + a1 * y1 + a2 * y2 + a3 * y3
        d[j] += b0 * y0 + b1 * y1 + b2 * y2 + b3 * y3


@helper
def add_row1(c, x, a):
    """c += a x over c's length (add_rows4's remainder)."""
    for j in range(c.shape[0]):
        c[j] += a * x[j]


@helper
def add_rows(c, X, c0, lo, hi, w, sign):
    """c += sign sum_k w[k] X[k, c0:c0 + len(c)] over the rows k in [lo, hi), four a
    pass; w a 1-D (possibly strided) view of the coefficients, sign 1.0 or -1.0 (exact:
    the same products as w[k] or -w[k])."""
    n = c.shape[0]
    e = c0 + n
    k = lo
    while k + 4 <= hi:
        add_rows4(c, X[k, c0:e], X[k + 1, c0:e], X[k + 2, c0:e], X[k + 3, c0:e],
                  sign * w[k], sign * w[k + 1], sign * w[k + 2], sign * w[k + 3])
        k += 4
    while k < hi:
        add_row1(c, X[k, c0:e], sign * w[k])
        k += 1


@helper
def add_rows_x2(c, d, X, c0, lo, hi, w, u, sign):
    """c += sign sum_k w[k] X[k, c0:c0 + len(c)] and d += sign sum_k u[k] X[k, ...]
    over the rows k in [lo, hi) (add_rows on two output rows at once: add_rows4x2)."""
    n = c.shape[0]
    e = c0 + n
    k = lo
    while k + 4 <= hi:
        add_rows4x2(c, d, X[k, c0:e], X[k + 1, c0:e], X[k + 2, c0:e], X[k + 3, c0:e],
                    sign * w[k], sign * w[k + 1], sign * w[k + 2], sign * w[k + 3],
                    sign * u[k], sign * u[k + 1], sign * u[k + 2], sign * u[k + 3])
        k += 4
    while k < hi:
        add_row1(c, X[k, c0:e], sign * w[k])
        add_row1(d, X[k, c0:e], sign * u[k])
        k += 1
