"""ktune's tuned kernels in PyTorch: custom ops (ktune_torch.ops, registered as torch.ops.ktune.*), INT4/INT8 weight
packing (ktune_torch.packing) and a drop-in for Hugging Face Llama models (ktune_torch.llama.patch_model).

The CUDA kernels come from a shared library built from ktune's exported headers (scripts/build_torch_ops.sh);
ktune_torch.library_status() says whether it loaded and which ops it holds."""

from . import _lib, llama, ops, packing  # noqa: F401  (importing ops registers torch.ops.ktune.*)

__all__ = ["llama", "ops", "packing", "library_status"]


def library_status():
    """(loaded, ops built into the library, or the reason it did not load)."""
    lib = _lib.load()
    if lib is None:
        return False, _lib.load_error()
    return True, [name for name in _lib.OP_BITS if _lib.has_op(name)]
