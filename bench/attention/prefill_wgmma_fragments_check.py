"""Emulates one warpgroup of kernels/attention/prefill_attention_wgmma.cuh's data plumbing on the CPU: the kernel's
index formulas (copied here: keep them in sync) for the swizzled shared panels (copy_panels), the K-major descriptors
of S = Q K^T (q rows of the warpgroup, K tile, k-steps of 16 across panels), the S accumulator -> P A-fragment reuse,
the MN-major descriptors of O += P V (one n64 instruction per 64-column panel of V, k-steps of 16 tokens) and the
epilogue's columns, against the PTX ISA's wgmma definitions as this file models them (128-byte swizzle: byte address
bits 4-6 XOR bits 7-9; K-major: 8-row groups SBO apart, k contiguous in a row; MN-major: 8-k groups SBO apart, n
contiguous; accumulator d[4 j + e] at (16 w + g + 8 (e / 2), 8 j + 2 c + e % 2); A regs a[0..3] at (16 w + g, 2 c),
(+8, 2 c), (g, 2 c + 8), (+8, 2 c + 8)), with numpy's matmuls as the truth. Prints the largest errors (~1e-13 when the
plumbing is right; O(1) when an index is wrong). The model of the hardware is an assumption: only the GPU proves it.
No GPU needed: python3 bench/attention/prefill_wgmma_fragments_check.py
"""
import numpy as np

rng = np.random.default_rng(0)


def copy_panels(mat, rows, d):  # the kernel's copy_panels: returns a byte-addressed smem as element array (2 bytes)
    smem = np.full(rows * d, np.nan)
    for row in range(rows):
        for ch in range(d // 8):
            byte = (ch >> 3) * (rows * 128) + row * 128 + (((ch & 7) ^ (row & 7)) << 4)
            smem[byte // 2:byte // 2 + 8] = mat[row, ch * 8:ch * 8 + 8] if row < mat.shape[0] else 0.0
    return smem


def swizzle(addr):  # 128-byte swizzle on (1024-aligned-atom) byte addresses
    return addr ^ (((addr >> 7) & 7) << 4)


def read_k_major(smem, start, rows):  # operand [rows][16 k] of a K-major descriptor (SBO 1024)
    out = np.zeros((rows, 16))
    for r in range(rows):
        for kk in range(16):
            out[r, kk] = smem[swizzle(start + (r // 8) * 1024 + (r % 8) * 128 + 2 * kk) // 2]
    return out


def read_mn_major(smem, start, n):  # operand [16 k][n] of an MN-major descriptor (8-k groups SBO 1024 apart)
    out = np.zeros((16, n))
    for t in range(16):
        for col in range(n):
            out[t, col] = smem[swizzle(start + (t // 8) * 1024 + (t % 8) * 128 + 2 * col) // 2]
    return out


def acc_pos(thread, i):  # accumulator element i of a thread of the warpgroup: (row, column)
    w, lane = thread // 32, thread % 32
    g, c, j, e = lane // 4, lane % 4, i // 4, i % 4
    return 16 * w + g + 8 * (e // 2), 8 * j + 2 * c + e % 2


def a_frag_pos(thread, reg, half):  # A register reg (0-3), half (lo 0, hi 1): (row, k)
    w, lane = thread // 32, thread % 32
    g, c = lane // 4, lane % 4
    return 16 * w + g + 8 * (reg & 1), 2 * c + 8 * (reg >> 1) + half


def wgmma_acc(acc, A, B):  # acc[thread][i] += (A @ B) at the accumulator layout; A [64][16], B [16][N]
    C = A @ B
    for t in range(128):
        for i in range(len(acc[t])):
            r, col = acc_pos(t, i)
            acc[t][i] += C[r, col]


def check(D, BN, BM, wg, len_valid):
    Q = rng.standard_normal((BM, D)); K = rng.standard_normal((BN, D)); V = rng.standard_normal((BN, D))
    K[len_valid:] = 0; V[len_valid:] = 0  # zero-filled rows past the sequence
    qs = copy_panels(Q, BM, D); ks = copy_panels(K, BN, D); vs = copy_panels(V, BN, D)
    assert not np.isnan(qs).any() and not np.isnan(ks).any() and not np.isnan(vs).any(), "a panel byte never written"
    q_wg = wg * 64 * 128
    # S = Q K^T: k-step ks starts in panel ks / 4 at byte 32 (ks % 4).
    s = [[0.0] * (BN // 2) for _ in range(128)]
    for kstep in range(D // 16):
        A = read_k_major(qs, q_wg + (kstep >> 2) * (BM * 128) + (kstep & 3) * 32, 64)
        B = read_k_major(ks, (kstep >> 2) * (BN * 128) + (kstep & 3) * 32, BN).T  # B[k][n] = K[n][k]
        wgmma_acc(s, A, B)
    S_true = Q[64 * wg:64 * wg + 64] @ K.T
    S_got = np.zeros((64, BN))
    for t in range(128):
        for i in range(BN // 2):
            S_got[acc_pos(t, i)] = s[t][i]
    err_s = np.abs(S_got - S_true).max()
    # P = S (no softmax: the plumbing only); pack_p: pf[kt][0..3] = s[8 kt + 0, 1], [2, 3], [4, 5], [6, 7].
    o = [[[0.0] * 32 for _ in range(D // 64)] for _ in range(128)]
    for kt in range(BN // 16):
        A = np.full((64, 16), np.nan)
        for t in range(128):
            for reg in range(4):
                for half in range(2):
                    A[a_frag_pos(t, reg, half)] = s[t][8 * kt + 2 * reg + half]
        assert not np.isnan(A).any(), "an A element no register holds"
        for p in range(D // 64):
            B = read_mn_major(vs, p * (BN * 128) + kt * 2048, 64)
            acc = [o[t][p] for t in range(128)]
            wgmma_acc(acc, A, B)
    O_true = S_true @ V
    O_got = np.zeros((64, D))
    for t in range(128):  # epilogue: o[p][4 jd + 2 h (+1)] -> row + 8 h, column 64 p + 8 jd + 2 c (+1)
        for p in range(D // 64):
            for i in range(32):
                r, col = acc_pos(t, i)
                O_got[r, 64 * p + col] = o[t][p][i]
    err_o = np.abs(O_got - O_true).max()
    return err_s, err_o


worst = 0.0
for D, BN, BM, wg, valid in [(128, 64, 128, 1, 64), (128, 128, 128, 0, 100), (64, 192, 64, 0, 192), (128, 176, 64, 0, 33)]:
    es, eo = check(D, BN, BM, wg, valid)
    print(f"D {D} BLOCK_N {BN} BLOCK_M {BM} warpgroup {wg} valid {valid}: max |S err| {es:.2e}, max |O err| {eo:.2e}")
    worst = max(worst, es, eo)
print("OK" if worst < 1e-9 else "FAILED", f"(largest error {worst:.2e})")
raise SystemExit(0 if worst < 1e-9 else 1)
