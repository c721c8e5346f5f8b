#!/usr/bin/env python3
"""Writes the headers of inline-PTX wgmma.mma_async wrappers (m64nNk16, fp32 accumulators): the inline PTX must name
each of the N/2 accumulator registers, so every shape is spelled out. One generator, one target per header:
  gemm       kernels/gemm/wgmma_ops.cuh (GEMM + activation, gated FFN, the skinny linear's x tiles)
             Wgmma<T, N>:   D += A B^T, A and B K-major in shared memory (descriptors), scale-d = 1.
  attention  kernels/attention/wgmma_attention_ops.cuh (prefill attention's wgmma alternative)
             WgmmaSS<T, N>: D (+)= A B^T, A and B K-major descriptors; scale_d 0 overwrites D (S = Q K^T).
             WgmmaRS<T, N>: D += A B, A in registers (4 x 32-bit: the m64nNk16 A fragment), B MN-major in shared
                            memory (imm-trans-b = 1: V as stored, [token][d]) (O += P V).
Run after changing a target's shapes; --check (CTest generated_wgmma_ops) fails where a committed header differs.
  kernels/gemm/gen_wgmma_ops.py [--check] [TARGET...]      (default: every target)
A header's bytes are part of the source hash that keys every stored tuning of the kernels including it, so output
for unchanged shapes stays byte for byte what it was (the attention header still names its old entry point,
kernels/attention/gen_wgmma_attention_ops.py, which runs this script's attention target).
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TYPES = [("__nv_bfloat16", "bf16"), ("__half", "f16")]


def ss_wrapper(struct, ctype, ptx, n, scale_d_param):
    """D (+)= A B^T from two K-major shared-memory descriptors. scale_d_param: the name of a run-time int argument
    that chooses accumulate (non-zero) or overwrite (0), or None for always accumulate."""
    regs = n // 2
    dlist = ", ".join(f"%{i}" for i in range(regs))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    extra = f", int {scale_d_param}" if scale_d_param else ""
    scale_d = scale_d_param or "1"
    return [f"template <>",
            f"struct {struct}<{ctype}, {n}> {{",
            f"    static __device__ __forceinline__ void mma(float (&d)[{regs}], unsigned long long desc_a,",
            f"                                               unsigned long long desc_b{extra}) {{",
            f"        asm volatile(",
            f'            "{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 2}, 0;\\n"',
            f'            "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ptx}.{ptx} "',
            f'            "{{{dlist}}}, "',
            f'            "%{regs}, %{regs + 1}, p, 1, 1, 0, 0;\\n}}\\n"',
            f"            : {outs}",
            f'            : "l"(desc_a), "l"(desc_b), "r"({scale_d}));',
            f"    }}",
            f"}};",
            ""]


def rs_wrapper(struct, ctype, ptx, n):
    """D += A B, A's m64nNk16 fragment in 4 registers, B an MN-major shared-memory descriptor (imm-trans-b = 1)."""
    regs = n // 2
    dlist = ", ".join(f"%{i}" for i in range(regs))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    alist = ", ".join(f"%{regs + i}" for i in range(4))
    return [f"template <>",
            f"struct {struct}<{ctype}, {n}> {{",
            f"    static __device__ __forceinline__ void mma(float (&d)[{regs}], const unsigned (&a)[4],",
            f"                                               unsigned long long desc_b) {{",
            f"        asm volatile(",
            f'            "{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 5}, 0;\\n"',
            f'            "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ptx}.{ptx} "',
            f'            "{{{dlist}}}, "',
            f'            "{{{alist}}}, %{regs + 4}, p, 1, 1, 1;\\n}}\\n"',
            f"            : {outs}",
            f'            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));',
            f"    }}",
            f"}};",
            ""]


# Each target: its header, the script its first comment names, that comment's description, its namespace, and per
# input type the wrappers in order: (struct, kind, tile widths N).
TARGETS = {
    "gemm": {
        "path": "kernels/gemm/wgmma_ops.cuh",
        "written_by": "kernels/gemm/gen_wgmma_ops.py",
        "about": ["// wgmma.mma_async m64nNk16, fp32 accumulators, A and B both K-major in shared memory "
                  "(descriptors), no",
                  "// transpose, D += A B^T (scale-d = 1). d holds the warpgroup's m64 x N fragment: N / 2 floats "
                  "per thread."],
        "namespace": "ktune::dev::gemm",
        # 8-32: the skinny linear's x tiles (kernels/linear_skinny/linear_skinny_wgmma.cuh); 64-256: the GEMMs' BN.
        "wrappers": [("Wgmma", "ss", [8, 16, 32, 64, 128, 192, 256])],
    },
    "attention": {
        "path": "kernels/attention/wgmma_attention_ops.cuh",
        "written_by": "kernels/attention/gen_wgmma_attention_ops.py",
        "about": ["// wgmma.mma_async m64nNk16 with fp32 accumulators for prefill attention: SS (A and B K-major "
                  "descriptors,",
                  "// scale-d chosen at run time) and RS (A in registers, B an MN-major descriptor: imm-trans-b = 1)."],
        "namespace": "ktune::dev::prefill_attention",
        "wrappers": [("WgmmaSS", "ss_scale_d", [64, 96, 128, 176, 192]),  # BLOCK_N
                     ("WgmmaRS", "rs", [64])],  # one 64-column panel of the head dimension per instruction
    },
}


def render(target):
    t = TARGETS[target]
    out = ["#pragma once",
           f"// GENERATED by {t['written_by']}; do not edit: regenerate.",
           *t["about"],
           "#include <cuda_bf16.h>",
           "#include <cuda_fp16.h>",
           "",
           f"namespace {t['namespace']} {{",
           ""]
    for struct, _, _ in t["wrappers"]:
        out += ["template <typename T, int N>", f"struct {struct};"]
    out.append("")
    for ctype, ptx in TYPES:
        for struct, kind, ns in t["wrappers"]:
            for n in ns:
                if kind == "ss":
                    out += ss_wrapper(struct, ctype, ptx, n, None)
                elif kind == "ss_scale_d":
                    out += ss_wrapper(struct, ctype, ptx, n, "scale_d")
                else:
                    out += rs_wrapper(struct, ctype, ptx, n)
    out += [f"}}  // namespace {t['namespace']}", ""]
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Writes (or with --check compares) the wgmma wrapper headers.")
    parser.add_argument("--check", action="store_true", help="write nothing; fail if a committed header differs")
    parser.add_argument("targets", nargs="*", metavar="TARGET", help=f"any of {', '.join(TARGETS)} (default: all)")
    args = parser.parse_args(argv)
    unknown = [t for t in args.targets if t not in TARGETS]
    if unknown:
        parser.error(f"unknown target {', '.join(unknown)} (targets: {', '.join(TARGETS)})")
    stale = []
    for target in args.targets or list(TARGETS):
        path = os.path.join(ROOT, TARGETS[target]["path"])
        text = render(target)
        if args.check:
            with open(path, newline="") as f:
                if f.read() != text:
                    stale.append(TARGETS[target]["path"])
        else:
            with open(path, "w", newline="") as f:
                f.write(text)
    if stale:
        sys.exit(f"stale generated headers (run kernels/gemm/gen_wgmma_ops.py): {', '.join(stale)}")


if __name__ == "__main__":
    main()
