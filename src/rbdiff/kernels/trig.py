"""(cos x, sin x) in one call, from one argument reduction: every revolute joint needs
both, and two libm calls cost about as much as the rest of its placement.

Cody-Waite reduction by pi/2 in two steps (fdlibm's medium-size split: PIO2_1 and
PIO2_2 have 33 significant bits, so k PIO2_1 and k PIO2_2 are exact for |k| < 2^20; the
reduced argument is then off by about k 1e-31) and fdlibm's minimax kernels on
[-pi/4, pi/4] (musl's __sin.c / __cos.c) taking the reduction's tail into account:
within 1 ulp of libm, or 1e-26 absolute next to a zero of cos or sin. |x| >= HUGE falls
back to np.cos / np.sin.

Arithmetic only, so the same source compiles for float64, float32 (computed in float64),
complex128 (complex step: the polynomials are analytic, so their imaginary parts carry
the derivative; reduction and quadrant are taken from the real part) and CUDA.
"""

import math

import numpy as np

from .jit import helper

INVPIO2 = 6.36619772367581382433e-01
PIO2_1 = 1.57079632673412561417e+00     # first 33 bits of pi/2
PIO2_2 = 6.07710050630396597660e-11     # next 33 bits
PIO2_2T = 2.02226624879595063154e-21    # pi/2 - PIO2_1 - PIO2_2
HUGE = 8192.0                           # past this, use libm

S1 = -1.66666666666666324348e-01
S2 = 8.33333333332248946124e-03
S3 = -1.98412698298579493134e-04
S4 = 2.75573137070700676789e-06
S5 = -2.50507602534068634195e-08
S6 = 1.58969099521155010221e-10
C1 = 4.16666666666666019037e-02
C2 = -1.38888888888741095749e-03
C3 = 2.48015872894767294178e-05
C4 = -2.75573143513906633035e-07
C5 = 2.08757232129817482790e-09
C6 = -1.13596475577881948265e-11


@helper
def kernel_sin(x, y):
    """sin(x + y) for |x| <= pi/4, y the tail of x (|y| << ulp(x))."""
    z = x * x
    w = z * z
    r = S2 + z * (S3 + z * S4) + z * w * (S5 + z * S6)
    v = z * x
    return x - ((z * (0.5 * y - v * r) - y) - v * S1)


@helper
def kernel_cos(x, y):
    """cos(x + y) for |x| <= pi/4, y the tail of x."""
    z = x * x
    w = z * z
    r = z * (C1 + z * (C2 + z * C3)) + w * w * (C4 + z * (C5 + z * C6))
    hz = 0.5 * z
    w = 1.0 - hz
    return w + (((1.0 - w) - hz) + (z * r - x * y))


@helper
def sincos(x):
    """(cos x, sin x); see the module docstring for the accuracy."""
    xr = x.real
    if not abs(xr) < HUGE:       # also NaN and Inf: libm's answer
        return np.cos(x), np.sin(x)
    k = int(math.floor(xr * INVPIO2 + 0.5))     # (np.floor is no CUDA ufunc)
    t = x - k * PIO2_1
    w = k * PIO2_2
    r = t - w
    w = k * PIO2_2T - ((t - r) - w)
    y0 = r - w
    y1 = (r - y0) - w
    c = kernel_cos(y0, y1)
    s = kernel_sin(y0, y1)
    n = k & 3
    if n == 0:
        return c, s
    if n == 1:
        return -s, c
    if n == 2:
        return -c, -s
    return s, -c
