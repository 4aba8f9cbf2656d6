"""XLA FFI route for rbdiff.jax's kernels (placeholder; see host.py)."""


def available(name):
    return False
