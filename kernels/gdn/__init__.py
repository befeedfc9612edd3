"""Gated DeltaNet: recurrent and chunked (WY) references in JAX and chunked Pallas TPU kernels.

``gdn`` is the public entry point; ``impl`` picks ``recurrent``, ``chunked_xla`` or ``pallas``.
"""

from .api import DEFAULT_IMPL, IMPLS, gdn, l2norm, resolve_chunk_size
from .chunk import chunk_gdn_xla
from .naive import recurrent_gdn
from .pallas_tpu import BlockSizes, chunk_gdn_pallas

chunk_gated_delta_rule = gdn

__all__ = [
    "DEFAULT_IMPL",
    "IMPLS",
    "BlockSizes",
    "chunk_gated_delta_rule",
    "chunk_gdn_pallas",
    "chunk_gdn_xla",
    "gdn",
    "l2norm",
    "recurrent_gdn",
    "resolve_chunk_size",
]
