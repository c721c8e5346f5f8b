#!/usr/bin/env python3
"""Writes wgmma_attention_ops.cuh: runs the one wgmma wrapper generator, kernels/gemm/gen_wgmma_ops.py, for its
attention target (its shapes are listed there). Kept because the header's first comment names this script, and the
header's bytes are part of the source hash of prefill attention's stored tunings."""
import os
import runpy
import sys

generator = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gemm", "gen_wgmma_ops.py")
sys.argv = [generator, *sys.argv[1:], "attention"]
runpy.run_path(generator, run_name="__main__")
