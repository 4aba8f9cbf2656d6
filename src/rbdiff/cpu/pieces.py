"""Pieces of entries, compiled apart: an entry calls them by address (twin.twin_ahead),
so that a cold first call compiles the piece in a background child on a second core
while it compiles the rest, and the piece's machine code is cached once for every
caller. Internal: the calling entry has checked the inputs; no math lives here."""

from ..kernels.aba_derivatives import derivatives_after_aba
from ..kernels.fdsva_so import fdsva_so_products, fdsva_so_terms
from ..kernels.jit import entry
from ..kernels.minverse import minverse_factored


@entry
def aba_derivatives_piece(mi, mf, v, fext, ws, S3, F, dq, dv, dtau):
    """kernels.aba_derivatives.derivatives_after_aba (after ABA on ws): half of
    aba_derivatives_one's compile (M^-1, IDSVA, the products)."""
    derivatives_after_aba(mi, mf, v, fext, ws, S3, F, dq, dv, dtau)


@entry
def fdsva_so_terms_piece(mi, mf, v, fext, ws, sc, Mt, F, T):
    """Minv from ABA's factorisation on ws, then kernels.fdsva_so.fdsva_so_terms: half of
    aba_second_order_one's compile (M^-1, IDSVA-SO, FDSVA first order)."""
    minverse_factored(mi, ws, F, Mt[3])
    fdsva_so_terms(mi, mf, v, fext, ws, sc, Mt, T)


@entry
def fdsva_so_products_piece(mi, mf, ws, lam, Mt, T, dQ, dV, dX, dT, inner, outer):
    """kernels.fdsva_so.fdsva_so_products with the IDFOZA route, which only long chains
    take: aba_second_order_one compiles without it and calls this on such models."""
    fdsva_so_products(mi, mf, ws, lam, Mt, T, dQ, dV, dX, dT, inner, outer)
