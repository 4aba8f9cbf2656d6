"""CPU entry points, compiled; no math (that is in rbdiff.kernels):

``single``  one state per call (``*_one``), on scratch the model keeps or allocates once;
``batch``   a leading batch axis: ``*_batch`` (items in order on the calling thread) and
            ``*_parallel`` (contiguous chunks in a ``prange``, one scratch per chunk);
``checks``  the input checks both share;
``policy``  which of ``*_batch`` / ``*_parallel`` a batch call runs;
``background`` a ``*_parallel`` entry compiled in a child process, first time round.
"""
