"""Loads ktune_torch's op library (scripts/build_torch_ops.sh builds it) with ctypes.

The library is looked up at $KTUNE_TORCH_LIB, else <repository>/build/ktune_torch/libktune_torch_ops.so. Without it
(or without CUDA) the ops still run on CPU through their reference implementations; CUDA calls then raise.
"""

import ctypes
import os
from pathlib import Path

ABI_VERSION = 7
NOT_BUILT = 100

# Bits of ktune_torch_ops_built().
OP_BITS = {
    "rms_norm": 0,
    "rms_norm_bwd": 1,
    "add_rms_norm": 2,
    "add_rms_norm_inplace": 3,
    "rope_neox": 4,
    "swiglu": 5,
    "decode_attention": 6,
    "linear_int4": 7,
    "linear_int8": 8,
    "add_rms_norm_eps": 9,
    "linear_skinny": 10,
    "rope_neox_cache": 11,
    "swiglu_linear": 12,
    "swiglu_bwd": 13,
    "add_rms_norm_linear": 14,
    "prefill_attention_causal": 15,
    "prefill_attention_full": 16,
    "gemm_act_none": 17,
    "gemm_act_gelu": 18,
    "gemm_act_silu": 19,
    "ffn_gated_swiglu": 20,
    "ffn_gated_geglu": 21,
}

_c_ll = ctypes.c_longlong
_c_p = ctypes.c_void_p
_c_i = ctypes.c_int

_SIGNATURES = {
    "ktune_torch_abi_version": ([], _c_i),
    "ktune_torch_ops_built": ([], _c_i),
    "ktune_torch_set_programmatic_launch": ([_c_i], None),
    "ktune_torch_status_message": ([_c_i], ctypes.c_char_p),
    "ktune_torch_last_choice": ([_c_p, _c_p, _c_p], ctypes.c_char_p),
    "ktune_torch_rms_norm": ([_c_i, _c_p, _c_p, _c_p, _c_ll, _c_ll, _c_ll, _c_ll, ctypes.c_float, _c_p], _c_i),
    "ktune_torch_rms_norm_bwd_scratch": ([_c_i, _c_ll, _c_ll], _c_ll),
    "ktune_torch_rms_norm_bwd": ([_c_i, _c_p, _c_p, _c_p, _c_p, _c_p, _c_p, _c_ll, _c_ll, _c_p], _c_i),
    "ktune_torch_add_rms_norm": ([_c_i, _c_p, _c_p, _c_p, _c_p, _c_p, _c_ll, _c_ll, _c_p], _c_i),
    "ktune_torch_add_rms_norm_eps": ([_c_i, _c_p, _c_p, _c_p, _c_p, _c_p, _c_ll, _c_ll, _c_ll, _c_p], _c_i),
    "ktune_torch_add_rms_norm_inplace": ([_c_i, _c_p, _c_p, _c_p, _c_p, _c_ll, _c_ll, _c_p], _c_i),
    "ktune_torch_rope_neox": (
        [_c_i, _c_p, _c_p, _c_p, _c_p, _c_p, _c_ll, _c_ll, _c_ll, _c_ll, _c_ll, _c_ll, _c_ll, _c_ll, _c_p],
        _c_i,
    ),
    "ktune_torch_rope_neox_cache": (
        [_c_i, _c_p, _c_p, _c_p, _c_p, _c_p, _c_p, _c_p, _c_p, _c_ll, _c_ll, _c_ll, _c_ll, _c_ll, _c_ll, _c_ll, _c_ll,
         _c_ll, _c_ll, _c_p],
        _c_i,
    ),
    "ktune_torch_swiglu": ([_c_i, _c_p, _c_p, _c_p, _c_ll, _c_ll, _c_ll, _c_ll, _c_p], _c_i),
    "ktune_torch_decode_attention_scratch": ([_c_i, _c_ll, _c_ll, _c_ll, _c_ll, _c_ll], _c_ll),
    "ktune_torch_decode_attention": (
        [_c_i, _c_p, _c_p, _c_p, _c_p, _c_p, _c_p, _c_ll, _c_ll, _c_ll, _c_ll, _c_ll, _c_p],
        _c_i,
    ),
    "ktune_torch_prefill_attention": (
        [_c_i, _c_i, _c_p, _c_p, _c_p, _c_p, _c_p, _c_ll, _c_ll, _c_ll, _c_ll, _c_ll, _c_i, _c_p],
        _c_i,
    ),
    "ktune_torch_linear_act": ([_c_i, _c_i, _c_p, _c_p, _c_p, _c_p, _c_ll, _c_ll, _c_ll, _c_p], _c_i),
    "ktune_torch_ffn_gated": ([_c_i, _c_i, _c_p, _c_p, _c_p, _c_ll, _c_ll, _c_ll, _c_p], _c_i),
    "ktune_torch_linear_int4_scratch": ([_c_i, _c_ll, _c_ll, _c_ll, _c_ll], _c_ll),
    "ktune_torch_linear_int8_scratch": ([_c_i, _c_ll, _c_ll, _c_ll], _c_ll),
    "ktune_torch_linear_int4": ([_c_i, _c_p, _c_p, _c_p, _c_p, _c_p, _c_p, _c_ll, _c_ll, _c_ll, _c_ll, _c_p], _c_i),
    "ktune_torch_linear_int8": ([_c_i, _c_p, _c_p, _c_p, _c_p, _c_p, _c_ll, _c_ll, _c_ll, _c_p], _c_i),
    "ktune_torch_linear_skinny_scratch": ([_c_i, _c_ll, _c_ll, _c_ll], _c_ll),
    "ktune_torch_linear_skinny_tuned": ([_c_i, _c_ll, _c_ll, _c_ll], _c_i),
    "ktune_torch_linear_skinny": ([_c_i, _c_p, _c_p, _c_p, _c_p, _c_ll, _c_ll, _c_ll, _c_p], _c_i),
    "ktune_torch_swiglu_linear_scratch": ([_c_i, _c_ll, _c_ll, _c_ll], _c_ll),
    "ktune_torch_swiglu_linear_tuned": ([_c_i, _c_ll, _c_ll, _c_ll], _c_i),
    "ktune_torch_swiglu_linear": ([_c_i, _c_p, _c_p, _c_p, _c_p, _c_ll, _c_ll, _c_ll, _c_p], _c_i),
    "ktune_torch_swiglu_backward": ([_c_i, _c_p, _c_p, _c_p, _c_p, _c_p, _c_ll, _c_ll, _c_ll, _c_ll, _c_p], _c_i),
    "ktune_torch_add_rms_norm_linear_scratch": ([_c_i, _c_ll, _c_ll, _c_ll, _c_ll], _c_ll),
    "ktune_torch_add_rms_norm_linear_tuned": ([_c_i, _c_ll, _c_ll, _c_ll, _c_ll], _c_i),
    "ktune_torch_add_rms_norm_linear": ([_c_i, _c_p, _c_p, _c_p, _c_p, _c_p, _c_p, _c_p, _c_ll, _c_ll, _c_ll, _c_ll,
                                         _c_p], _c_i),
    "ktune_torch_int4_weight_bytes": ([_c_ll, _c_ll], _c_ll),
    "ktune_torch_int4_params": ([_c_ll, _c_ll, _c_ll], _c_ll),
    "ktune_torch_int8_weight_bytes": ([_c_ll, _c_ll], _c_ll),
    "ktune_torch_pack_int4": ([_c_p, _c_ll, _c_ll, _c_p], _c_i),
    "ktune_torch_pack_int4_scales": ([_c_p, _c_ll, _c_ll, _c_ll, _c_p], _c_i),
    "ktune_torch_pack_int4_zeros": ([_c_p, _c_ll, _c_ll, _c_ll, _c_p], _c_i),
    "ktune_torch_pack_int8": ([_c_p, _c_ll, _c_ll, _c_p], _c_i),
}

_lib = None
_load_error = None


def library_path():
    env = os.environ.get("KTUNE_TORCH_LIB")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "build" / "ktune_torch" / "libktune_torch_ops.so"


def load():
    """The loaded library, or None (load_error() says why)."""
    global _lib, _load_error
    if _lib is not None or _load_error is not None:
        return _lib
    path = library_path()
    try:
        lib = ctypes.CDLL(str(path))
        for name, (args, res) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes = args
            fn.restype = res
        if lib.ktune_torch_abi_version() != ABI_VERSION:
            raise OSError(f"{path} has ABI {lib.ktune_torch_abi_version()}, this package needs {ABI_VERSION}: rebuild it")
        _lib = lib
    except (OSError, AttributeError) as e:  # AttributeError: a library older than a symbol this package calls
        _load_error = f"ktune_torch: cannot load {path}: {e} (build it: scripts/build_torch_ops.sh --db DB)"
    return _lib


def load_error():
    load()
    return _load_error


def require():
    lib = load()
    if lib is None:
        raise RuntimeError(_load_error)
    return lib


def get(what):
    """The library, or None (warned once) when it did not load: the caller runs its torch math."""
    lib = load()
    if lib is None and (what, "load") not in _warned:
        _warned.add((what, "load"))
        import warnings

        warnings.warn(f"{_load_error}; ktune_torch.{what} runs its torch implementation", RuntimeWarning, stacklevel=3)
    return lib


def has_op(name):
    lib = load()
    return lib is not None and bool(lib.ktune_torch_ops_built() >> OP_BITS[name] & 1)


# Statuses after which the op runs its torch math instead (on the same device): the library cannot serve this call
# (a pointer misaligned for the kernel's vectors, a dtype or shape no exported configuration takes, an op left out).
FALLBACK = {5: "misaligned", 6: "unsupported_dtype", 7: "no_config", NOT_BUILT: "not built"}
_warned = set()


def check(status, what):
    if status != 0:
        msg = require().ktune_torch_status_message(status).decode()
        raise RuntimeError(f"ktune_torch.{what}: {msg} (status {status})")


LEVELS = ("exact device", "same chip", "same architecture", "default configuration", "none")
# With tracing on (trace(True)), what each op launched: {(op, kernel instance or "torch math", how it was chosen)}.
# Host-side bookkeeping after each call: meant for a diagnostic step, not for timed or captured ones.
_trace = None


def trace(on=True):
    """Starts (clearing) or stops recording the dispatch of every call; returns what was recorded."""
    global _trace
    recorded = _trace
    _trace = {} if on else None
    return recorded


def _record(what, status):
    if _trace is None:
        return
    if status == 0:
        level, exact = ctypes.c_int(), ctypes.c_int()
        kernel = require().ktune_torch_last_choice(ctypes.byref(level), ctypes.byref(exact), None).decode()
        how = f"{LEVELS[level.value] if 0 <= level.value < len(LEVELS) else level.value}, " + \
              ("tuned bucket" if exact.value else "nearest bucket")
    else:
        kernel, how = "torch math", FALLBACK.get(status, str(status))
    _trace[(what, kernel, how)] = _trace.get((what, kernel, how), 0) + 1


def launched(status, what):
    """True when the kernel was launched; False when the caller must fall back to its torch math (warned once per op
    and reason); raises on any other failure (bad arguments, a failed launch)."""
    _record(what, status)
    if status == 0:
        return True
    if status in FALLBACK:
        if (what, status) not in _warned:
            _warned.add((what, status))
            import warnings

            msg = require().ktune_torch_status_message(status).decode()
            warnings.warn(f"ktune_torch.{what}: {msg}; running its torch implementation instead (tune this shape and "
                          "rebuild the library)", RuntimeWarning, stacklevel=3)
        return False
    check(status, what)
    return True
