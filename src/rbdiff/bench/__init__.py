"""Benchmarks: a reusable interleaved timer (``timing``) and the rbdiff-vs-Pinocchio
single-call benchmark (``core``, ``python -m rbdiff bench-core``)."""
