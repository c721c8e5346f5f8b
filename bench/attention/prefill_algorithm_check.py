"""Emulates kernels/attention/prefill_attention_fa2.cuh's tile loop on the CPU, per warp, with the kernel's conditions copied
(keep them in sync): the query blocks past a sequence, the key tiles a block sees, the causal skip of tiles above a
warp's rows, which tiles are masked and how, the online softmax in log2 units (the -inf reference rule), and which
rows are written. Compares with a direct softmax over lengths 1, 17, L / 2 + 3 and L at L = 200 and 333 (no multiple of
any tile), causal and full, every tile shape of the spaces. Fragment plumbing: prefill_fragments_check.py.
    python3 bench/attention/prefill_algorithm_check.py
"""
import numpy as np, itertools
rng = np.random.default_rng(1)
NEG = -np.inf
def kernel(Q, K, V, L, length, causal, BM, BN, W, scale):
    MT = BM // (16 * W)
    D = Q.shape[1]
    out = np.full((L, D), np.nan)
    qscale = scale * 1.4426950408889634
    for mblock in range((L + BM - 1) // BM):
        m0 = mblock * BM
        if m0 >= length: continue
        kv_end = min(length, m0 + BM) if causal else length
        tiles = (kv_end + BN - 1) // BN
        for warp in range(W):
            row0 = warp * 16 * MT
            wf, wl = m0 + row0, m0 + row0 + 16 * MT - 1
            rows = np.arange(wf, wl + 1)
            q = np.array([Q[r] if r < length else np.zeros(D) for r in rows])  # zero-filled past the length
            m = np.full(len(rows), NEG); l = np.zeros(len(rows)); o = np.zeros((len(rows), D))
            for j in range(tiles):
                n0 = j * BN
                if causal and n0 > wl: continue
                keys = np.arange(n0, n0 + BN)
                k = np.array([K[t] if t < length else np.zeros(D) for t in keys])
                v = np.array([V[t] if t < length else np.zeros(D) for t in keys])
                s = q @ k.T
                if n0 + BN > length or (causal and n0 + BN - 1 > wf):
                    mask = (keys[None, :] >= length) | (causal & (keys[None, :] > rows[:, None]))
                    s = np.where(mask, NEG, s)
                mx = s.max(axis=1)
                m_new = np.maximum(m, mx * qscale)
                ref = np.where(m_new == NEG, 0.0, m_new)
                alpha = np.exp2(m - ref)  # m = -inf (nothing seen): 0
                m = m_new
                p = np.exp2(s * qscale - ref[:, None])
                l = l * alpha + p.sum(axis=1)
                o = o * alpha[:, None] + p @ v
            for i, r in enumerate(rows):
                if r < length:
                    out[r] = o[i] / l[i] if l[i] > 0 else 0.0
    return out
def reference(Q, K, V, L, length, causal, scale):
    out = np.full((L, Q.shape[1]), np.nan)
    for i in range(length):
        keys = i + 1 if causal else length
        s = Q[i] @ K[:keys].T * scale
        p = np.exp(s - s.max())
        out[i] = p @ V[:keys] / p.sum()
    return out
worst = 0
for L, D in ((200, 64), (333, 64)):
    Q = rng.uniform(-4, 4, (L, D)); K = rng.uniform(-1, 1, (L, D)); V = rng.uniform(-1, 1, (L, D))
    for length in (1, 17, L // 2 + 3, L):
        for causal, BM, BN, W in itertools.product((True, False), (64, 128), (32, 64, 128), (4, 8)):
            if BM % (16 * W) or BM // (16 * W) > 2: continue
            a = kernel(Q, K, V, L, length, causal, BM, BN, W, 1 / np.sqrt(D))
            b = reference(Q, K, V, L, length, causal, 1 / np.sqrt(D))
            assert np.array_equal(np.isnan(a), np.isnan(b)), (L, length, causal, BM, BN, W)
            err = np.nanmax(np.abs(a - b)) if length else 0
            worst = max(worst, err)
print("worst abs error", worst)
assert worst < 1e-9, "the tile loop is wrong"
