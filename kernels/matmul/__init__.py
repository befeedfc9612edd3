"""Blocked matmul with a fused epilogue, ``y = act(x @ w + b)``, as a Pallas TPU kernel.

``matmul_bias_act`` is the public entry point (interpret mode off TPU, Mosaic on TPU).
"""

from .pallas_tpu import ACTIVATIONS, KERNEL_NAME, BlockSizes, matmul_bias_act

__all__ = ["ACTIVATIONS", "KERNEL_NAME", "BlockSizes", "matmul_bias_act"]
