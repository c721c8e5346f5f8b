"""Emulates one warp of kernels/attention/prefill_attention_fa2.cuh's fragment plumbing on the CPU: the kernel's index
formulas (copied here: keep them in sync) for the swizzled shared rows, the ldmatrix loads of Q, K and V (.trans), the
S -> P register reuse and the epilogue's swizzled store, against the PTX ISA's ldmatrix and mma.m16n8k16 fragment
definitions, with numpy's matmuls as the truth. Prints the largest errors of S = Q K^T and O = S V (~1e-13 when the
plumbing is right; O(1) when an index is wrong). No GPU needed: python3 bench/attention/prefill_fragments_check.py
"""
import numpy as np
rng = np.random.default_rng(0)
D, BN = 128, 64
ROWB = D * 2
def swz(row, ch): return ((ch ^ (row & 7)) << 4)
def store_tile(mat):  # rows of D elements into a swizzled byte-addressed smem (element granularity: 2 bytes)
    rows = mat.shape[0]
    smem = np.zeros(rows * D)
    for r in range(rows):
        for ch in range(D // 8):
            a = (r * ROWB + swz(r, ch)) // 2
            smem[a:a + 8] = mat[r, ch * 8:ch * 8 + 8]
    return smem
def ldmatrix(smem, addrs, trans):  # addrs[lane] byte address of a row; returns regs[lane][i] = (lo, hi)
    out = [[None] * 4 for _ in range(32)]
    for i in range(4):
        m = np.array([smem[addrs[8 * i + r] // 2: addrs[8 * i + r] // 2 + 8] for r in range(8)])
        if trans: m = m.T
        for t in range(32):
            out[t][i] = (m[t // 4, 2 * (t % 4)], m[t // 4, 2 * (t % 4) + 1])
    return out
def mma(acc, a, b0, b1):  # acc[lane][4], a[lane][4] pairs, b pairs; reconstruct full matrices per PTX
    A = np.zeros((16, 16)); B = np.zeros((16, 8))
    for t in range(32):
        g, c = t // 4, t % 4
        A[g, 2*c:2*c+2] = a[t][0]; A[g+8, 2*c:2*c+2] = a[t][1]; A[g, 2*c+8:2*c+10] = a[t][2]; A[g+8, 2*c+8:2*c+10] = a[t][3]
        B[2*c:2*c+2, g] = b0[t]; B[2*c+8:2*c+10, g] = b1[t]
    C = A @ B
    for t in range(32):
        g, c = t // 4, t % 4
        acc[t][0] += C[g, 2*c]; acc[t][1] += C[g, 2*c+1]; acc[t][2] += C[g+8, 2*c]; acc[t][3] += C[g+8, 2*c+1]
Q = rng.standard_normal((16, D)); K = rng.standard_normal((BN, D)); V = rng.standard_normal((BN, D))
qs, ks, vs = store_tile(Q), store_tile(K), store_tile(V)
KS, NT, DT = D // 16, BN // 8, D // 8
qf = []
for kk in range(KS):
    addrs = []
    for lane in range(32):
        r = (lane & 7) + ((lane >> 3) & 1) * 8; ch = 2 * kk + (lane >> 4)
        addrs.append(r * ROWB + swz(r, ch))
    qf.append(ldmatrix(qs, addrs, False))
s = [[[0.0] * 4 for _ in range(32)] for _ in range(NT)]
for kk in range(KS):
    for np_ in range(NT // 2):
        addrs = []
        for lane in range(32):
            r = 16 * np_ + (lane & 7) + (lane >> 4) * 8; ch = 2 * kk + ((lane >> 3) & 1)
            addrs.append(r * ROWB + swz(r, ch))
        kf = ldmatrix(ks, addrs, False)
        mma(s[2 * np_], qf[kk], [kf[t][0] for t in range(32)], [kf[t][1] for t in range(32)])
        mma(s[2 * np_ + 1], qf[kk], [kf[t][2] for t in range(32)], [kf[t][3] for t in range(32)])
S = np.zeros((16, BN))
for nt in range(NT):
    for t in range(32):
        g, c = t // 4, t % 4
        S[g, 8*nt+2*c], S[g, 8*nt+2*c+1], S[g+8, 8*nt+2*c], S[g+8, 8*nt+2*c+1] = s[nt][t]
print("S max err", np.abs(S - Q @ K.T).max())
# P = S itself (skip softmax), O = P V via the kernel's register reuse and V.trans loads
o = [[[0.0] * 4 for _ in range(32)] for _ in range(DT)]
for kt in range(BN // 16):
    pf = [((s[2*kt][t][0], s[2*kt][t][1]), (s[2*kt][t][2], s[2*kt][t][3]), (s[2*kt+1][t][0], s[2*kt+1][t][1]),
           (s[2*kt+1][t][2], s[2*kt+1][t][3])) for t in range(32)]
    for dp in range(DT // 2):
        addrs = []
        for lane in range(32):
            r = 16 * kt + (lane & 7) + ((lane >> 3) & 1) * 8; ch = 2 * dp + (lane >> 4)
            addrs.append(r * ROWB + swz(r, ch))
        vf = ldmatrix(vs, addrs, True)
        mma(o[2*dp], pf, [vf[t][0] for t in range(32)], [vf[t][1] for t in range(32)])
        mma(o[2*dp+1], pf, [vf[t][2] for t in range(32)], [vf[t][3] for t in range(32)])
# epilogue: write pairs to swizzled smem at chunk dt, +4c bytes, then read rows back
out = np.zeros(16 * D)
for dt in range(DT):
    for t in range(32):
        g, c = t // 4, t % 4
        for h in range(2):
            r = g + 8 * h
            a = (r * ROWB + swz(r, dt) + 4 * c) // 2
            out[a], out[a + 1] = o[dt][t][2*h], o[dt][t][2*h+1]
O = np.zeros((16, D))
for lin in range(16 * D // 8):
    r, ch = lin // (D // 8), lin % (D // 8)
    a = (r * ROWB + swz(r, ch)) // 2
    O[r, ch*8:ch*8+8] = out[a:a+8]
print("O max err", np.abs(O - S @ V).max())
assert np.abs(S - Q @ K.T).max() < 1e-9 and np.abs(O - S @ V).max() < 1e-9, "fragment plumbing is wrong"
