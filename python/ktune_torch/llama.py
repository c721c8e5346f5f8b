"""Drop-in ktune kernels for Hugging Face Llama-family models (transformers 5.x).

patch_model(model, weights="bf16" | "int4" | "int8") rewrites, in place, the forwards of the model's modules:
  - each decoder layer: input RMSNorm (ktune::rms_norm), the post-attention residual add fused with its RMSNorm
    (ktune::add_rms_norm), the MLP's SwiGLU (ktune::swiglu); the final norm (ktune::rms_norm);
  - attention: NeoX RoPE (fp32 cos/sin caches built once from the model's own inv_freq and attention scaling). In
    decode_step() over a StaticCache, one launch (ktune::rope_neox_cache_) rotates q in place and writes the token's
    rotated k and its v straight into the cache at each sequence's position; elsewhere (prefill, generate()) RoPE is
    in place on q and k (ktune::rope_neox_) and the cache update is the model's Cache.update. One-token steps
    (decode) run ktune::decode_attention straight on the cache's tensors (HF StaticCache keeps [B, HKV, max_len, D],
    the kernel's layout: no copy), longer ones (prefill) run torch's SDPA;
  - the projections of attention and MLP: bf16 through ops.dense_linear (ktune::linear_skinny at decode sizes, M <=
    16, where that shape was tuned on this chip; F.linear elsewhere), or INT4 (group 128) / INT8 weight-only through
    ktune::linear_int4 / linear_int8 with the weights quantized and packed here (the bf16 weights are dropped).
    lm_head stays bf16, through ops.dense_linear too, unless quantize_lm_head. With fused projections and bf16
    weights, the MLP's SwiGLU and down projection are one kernel (ops.swiglu_dense_linear: ktune::swiglu_linear at
    M <= 16 where that shape was tuned on this chip; ktune::swiglu then ops.dense_linear elsewhere).
Training (grad mode on, weights trainable; fuse_projections, which patch_model does by default): the fused qkv projection
and RoPE are one autograd function (_QKVRope: RoPE in place on the projection's output; its backward gathers the
three gradients into one buffer and rotates back with the same kernel and the sine negated), likewise the fused
gate_up projection and SwiGLU (_GateUpSwiGLU; backward ktune::swiglu_backward_halves into one [M, 2I] buffer); RMSNorm and
add + RMSNorm have autograd (rmsnorm/bwd); attention is torch's SDPA, causal where HF passes no mask. The fused
weights are trainable parameters (qkv_proj, gate_up_proj: the state dict's keys change). The skinny kernels have no
backward: calls that record one take F.linear.
Every step allocates only its outputs and never synchronizes with the host: one decode step captures in a CUDA graph
(static shapes) and torch.compile traces the custom ops through their fake implementations.

Through HF's own forward (prefill, generate()) each layer's MLP residual add stays a torch add: fusing it with the next
layer's RMSNorm needs LlamaModel's loop. decode_step() below is that loop for one decode step (no mask building: the
decode kernel reads seq_lens = position + 1 tokens), every residual add fused with the RMSNorm after it.
Positions must be below the cos/sin cache (max_positions, default config.max_position_embeddings).
"""

import functools
import types

import torch
import torch.nn.functional as F

from . import ops, packing


class _Shared:
    """Per-model state the patched modules share: the rope caches, the largest decode batch. The kernels' scratch
    buffers are ops.shape_scratch's, one per shape: one stream runs the layers one after another, so the layers of a
    shape share one."""

    def __init__(self):
        self.cos = None
        self.sin = None
        self.sin_neg = None
        self.max_batch = 1
        self.group = 128


def _attention_forward(self, hidden_states, position_embeddings=None, attention_mask=None, **kwargs):
    sh = self._ktune
    cache = None
    for name in ("cache", "past_key_values", "past_key_value"):  # transformers 5.x renamed it, 4.x singular
        if kwargs.get(name) is not None:
            cache = kwargs[name]
            break
    position_ids = kwargs.get("position_ids")
    b, s, _ = hidden_states.shape
    hq, hk, d = self.config.num_attention_heads, self.config.num_key_value_heads, self.head_dim
    if position_ids is None:
        cache_position = kwargs.get("cache_position")
        if cache_position is None:
            past = cache.get_seq_length() if cache is not None else 0
            cache_position = torch.arange(past, past + s, device=hidden_states.device)
        position_ids = cache_position.view(1, s)
    position_ids = position_ids.expand(b, s)

    if _trains(self, "qkv_proj"):
        return _attention_train(self, hidden_states, position_ids, attention_mask, cache), None
    if hasattr(self, "qkv_proj"):  # one projection; q, k, v are views of its rows (RoPE takes the token stride)
        qkv = self.qkv_proj(hidden_states).view(b * s, -1)
        q = qkv[:, :hq * d].view(b * s, hq, d)
        k = qkv[:, hq * d:(hq + hk) * d].view(b * s, hk, d)
        v = qkv[:, (hq + hk) * d:].view(b * s, hk, d)
    else:
        q = self.q_proj(hidden_states).view(b * s, hq, d)
        k = self.k_proj(hidden_states).view(b * s, hk, d)
        v = self.v_proj(hidden_states).view(b * s, hk, d)
    step = kwargs.get("ktune_positions")  # decode_step's: converted once per step, not once per layer
    positions = step[0] if step is not None else position_ids.reshape(-1).to(torch.int32)
    layer_cache = _static_layer(cache, self.layer_idx, b) if step is not None and s == 1 else None
    if layer_cache is not None:
        # decode_step: one launch rotates q and k and writes the token's k, v straight into the static cache at each
        # sequence's position (HF's update adds three kernels of position arithmetic and two copies a layer);
        # decode_step advances the layers' own lengths once a step, all layers at once.
        ops.rope_neox_cache_(q, k, v, layer_cache.keys, layer_cache.values, positions, sh.cos, sh.sin)
        q = q.view(b, s, hq, d).transpose(1, 2)
        k_all, v_all = layer_cache.keys, layer_cache.values
    else:
        ops.rope_neox_(q, k, positions, sh.cos, sh.sin)
        q = q.view(b, s, hq, d).transpose(1, 2)
        k = k.view(b, s, hk, d).transpose(1, 2)
        v = v.view(b, s, hk, d).transpose(1, 2)
        if cache is not None:
            # transformers 5.x takes (k, v, layer_idx[, cache_kwargs]); older StaticCache layers read cache_position.
            k_all, v_all = cache.update(k, v, self.layer_idx, {"cache_position": position_ids[0]})
        else:
            k_all, v_all = k, v

    if s == 1 and k_all.is_contiguous() and v_all.is_contiguous():
        # Decode: the kernel reads the first seq_lens[b] tokens of the cache in place.
        seq_lens = step[1] if step is not None else (position_ids[:, -1] + 1).to(torch.int32)
        q = q.reshape(b, hq, d)
        out = ops.decode_attention(q, k_all, v_all, seq_lens, ops.decode_attention_scratch(q, k_all))
        out = out.reshape(b, 1, hq * d)
    else:
        kv_len = k_all.shape[2]
        mask = None
        if isinstance(attention_mask, torch.Tensor) and attention_mask.dim() == 4:
            mask = attention_mask[:, :, :, :kv_len]
        else:  # causal over absolute positions (no padding): token t is visible to the query at position p if t <= p
            mask = (torch.arange(kv_len, device=q.device)[None, None, :] <= position_ids[:, :, None])[:, None]
        out = F.scaled_dot_product_attention(q, k_all, v_all, attn_mask=mask, scale=self.scaling,
                                             enable_gqa=hq != hk)
        out = out.transpose(1, 2).reshape(b, s, hq * d)
    return self.o_proj(out), None


def _trains(module, fused_name):
    """Whether this call records a backward: grad mode on and the module's weights trainable. Training runs the fused
    projections through the autograd functions below (patch_model fuses them)."""
    if not torch.is_grad_enabled() or not any(p.requires_grad for p in module.parameters()):
        return False
    if not hasattr(module, fused_name):
        raise ValueError("ktune_torch.llama: training through patch_model needs fuse_projections=True")
    return True


def _linear_backward(dy, x, weight, bias, needs):
    """(dx, dW, db) of y = x W^T + b for 2-D dy [M, N], x [M, K]; None where needs (x, W, b) says no grad."""
    dx = dy @ weight if needs[0] else None
    dw = dy.t() @ x if needs[1] else None
    db = dy.sum(0) if bias is not None and needs[2] else None
    return dx, dw, db


class _QKVRope(torch.autograd.Function):
    """q, k, v [M, H, D] of the fused projection x W^T (+ b) with RoPE applied to q and k (in place in the projection's
    own output, ktune::rope_neox_). The backward writes the three gradients into one [M, (HQ + 2 HK) D] buffer (one
    pass, where autograd's slice backward would sum three zero-filled copies), rotates its q and k parts back
    (ktune::rope_neox_ with the sine negated: the inverse rotation), then the two products of the projection."""

    @staticmethod
    def forward(ctx, x, weight, bias, positions, cos, sin, sin_neg, hq, hk, d):
        x2 = x.reshape(-1, x.shape[-1])
        qkv = F.linear(x2, weight, bias)
        m = qkv.shape[0]
        q = qkv[:, :hq * d].view(m, hq, d)
        k = qkv[:, hq * d:(hq + hk) * d].view(m, hk, d)
        ops.rope_neox_(q, k, positions, cos, sin)
        ctx.save_for_backward(x2, weight, bias, positions, cos, sin_neg)
        ctx.heads = (hq, hk, d)
        ctx.x_shape = x.shape
        return q, k, qkv[:, (hq + hk) * d:].view(m, hk, d)

    @staticmethod
    def backward(ctx, dq, dk, dv):
        x2, weight, bias, positions, cos, sin_neg = ctx.saved_tensors
        hq, hk, d = ctx.heads
        m = x2.shape[0]
        g = x2.new_empty(m, (hq + 2 * hk) * d)
        parts = (g[:, :hq * d].view(m, hq, d), g[:, hq * d:(hq + hk) * d].view(m, hk, d),
                 g[:, (hq + hk) * d:].view(m, hk, d))
        for part, grad in zip(parts, (dq, dk, dv)):
            if grad is None:
                part.zero_()
            else:
                part.copy_(grad)
        ops.rope_neox_(parts[0], parts[1], positions, cos, sin_neg)
        dx, dw, db = _linear_backward(g, x2, weight, bias, ctx.needs_input_grad[:3])
        return (None if dx is None else dx.view(ctx.x_shape)), dw, db, None, None, None, None, None, None, None


class _GateUpSwiGLU(torch.autograd.Function):
    """silu(gate) * up of the fused projection [gate | up] = x W^T (+ b): ktune::swiglu on the two halves in place.
    The backward writes d(gate) and d(up) into one [M, 2I] buffer, then the projection's two products."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        x2 = x.reshape(-1, x.shape[-1])
        gate_up = F.linear(x2, weight, bias)
        i = gate_up.shape[1] // 2
        ctx.save_for_backward(x2, weight, bias, gate_up)
        ctx.x_shape = x.shape
        return ops.swiglu(gate_up[:, :i], gate_up[:, i:]).view(*x.shape[:-1], i)

    @staticmethod
    def backward(ctx, dh):
        x2, weight, bias, gate_up = ctx.saved_tensors
        i = gate_up.shape[1] // 2
        g = ops.swiglu_backward_halves(dh.reshape(gate_up.shape[0], i), gate_up[:, :i], gate_up[:, i:])
        dx, dw, db = _linear_backward(g, x2, weight, bias, ctx.needs_input_grad)
        return (None if dx is None else dx.view(ctx.x_shape)), dw, db


def _attention_train(self, hidden_states, position_ids, attention_mask, cache):
    """The training forward (fused qkv projection with RoPE, torch's SDPA, o_proj): causal over the tokens' order
    as HF's SDPA path is when it passes no mask; a 4-D mask is applied as it is."""
    if cache is not None:
        raise ValueError("ktune_torch.llama: a training forward takes no cache (use_cache=False)")
    sh = self._ktune
    b, s, _ = hidden_states.shape
    hq, hk, d = self.config.num_attention_heads, self.config.num_key_value_heads, self.head_dim
    positions = position_ids.expand(b, s).reshape(-1).to(torch.int32)
    proj = self.qkv_proj
    q, k, v = _QKVRope.apply(hidden_states, proj.weight, proj.bias, positions, sh.cos, sh.sin, sh.sin_neg, hq, hk, d)
    q, k, v = (t.view(b, s, -1, d).transpose(1, 2) for t in (q, k, v))
    mask = attention_mask if isinstance(attention_mask, torch.Tensor) else None
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None and s > 1,
                                         scale=self.scaling, enable_gqa=hq != hk)
    return self.o_proj(out.transpose(1, 2).reshape(b, s, hq * d))


def _static_layer(cache, idx, batch):
    """The layer of a StaticCache whose keys / values decode_step writes itself for `batch` sequences, as its update()
    would (at each sequence's position, through ktune::rope_neox_cache_): a plain StaticLayer (not a sliding window),
    initialised by the prefill, holding exactly `batch` sequences; None for anything else (HF's update writes it: a
    cache for more sequences than the step's, say). Where the layer counts its length in a tensor (cumulative_length),
    decode_step advances it."""
    layers = getattr(cache, "layers", None)
    if layers is None or idx >= len(layers):
        return None
    layer = layers[idx]
    if type(layer).__name__ != "StaticLayer" or not getattr(layer, "is_initialized", False):
        return None
    if not isinstance(getattr(layer, "keys", None), torch.Tensor) or not isinstance(layer.values, torch.Tensor):
        return None
    return layer if layer.keys.shape[0] == batch else None


def _decoder_forward(self, hidden_states, attention_mask=None, position_ids=None, **kwargs):
    eps = self.input_layernorm.variance_epsilon
    residual = hidden_states
    h = ops.rms_norm(hidden_states, self.input_layernorm.weight, eps)
    h, _ = self.self_attn(hidden_states=h, attention_mask=attention_mask, position_ids=position_ids, **kwargs)
    h, residual = ops.add_rms_norm(h, residual, self.post_attention_layernorm.weight,
                                   self.post_attention_layernorm.variance_epsilon)
    h = self.mlp(h)
    return residual + h


def _mlp_forward(self, x):
    if _trains(self, "gate_up_proj"):
        return self.down_proj(_GateUpSwiGLU.apply(x, self.gate_up_proj.weight, self.gate_up_proj.bias))
    if hasattr(self, "gate_up_proj"):  # one projection; swiglu reads its two halves in place (row stride 2I)
        gate_up = self.gate_up_proj(x)
        down = self.down_proj
        if isinstance(down, torch.nn.Linear):  # bf16: the fused SwiGLU + down projection where tuned (decode sizes)
            return ops.swiglu_dense_linear(gate_up, down.weight, down.bias)
        i = gate_up.shape[-1] // 2
        return down(ops.swiglu(gate_up[..., :i], gate_up[..., i:]))
    return self.down_proj(ops.swiglu(self.gate_proj(x), self.up_proj(x)))


def _fuse_linears(owner, names, fused_name):
    """Replaces owner's linears `names` by one whose output rows are theirs, concatenated in order."""
    parts = [getattr(owner, n) for n in names]
    weight = torch.cat([p.weight.detach() for p in parts], 0)
    fused = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=any(p.bias is not None for p in parts),
                            device="meta")
    trainable = any(p.weight.requires_grad for p in parts)  # the fused weight trains where the parts did
    fused.weight = torch.nn.Parameter(weight, requires_grad=trainable)
    if fused.bias is not None:
        fused.bias = torch.nn.Parameter(torch.cat([
            p.bias.detach() if p.bias is not None else weight.new_zeros(p.out_features) for p in parts]),
            requires_grad=trainable)
    for n in names:
        delattr(owner, n)
    setattr(owner, fused_name, fused)


def _norm_forward(self, x):
    return ops.rms_norm(x, self.weight, self.variance_epsilon)


def _dense_forward(self, x):
    return ops.dense_linear(x, self.weight, self.bias)


class QuantLinear(torch.nn.Module):
    """Weight-only INT4 (group-wise, asymmetric) or INT8 (per-row, symmetric) linear in ktune's packed layout."""

    def __init__(self, linear, bits, shared):
        super().__init__()
        self.bits = bits
        self.out_features, self.in_features = linear.weight.shape
        self.group = shared.group
        self._ktune = shared
        w = linear.weight.detach()
        if bits == 4:
            q, scales, zeros = packing.quantize_int4(w, self.group)
            pw, ps, pz = packing.pack_int4(q, self.group, scales, zeros)
            self.register_buffer("qweight", pw)
            self.register_buffer("scales", ps)
            self.register_buffer("zeros", pz)
        elif bits == 8:
            q, scales = packing.quantize_int8(w)
            self.register_buffer("qweight", packing.pack_int8(q))
            self.register_buffer("scales", scales)
        else:
            raise ValueError(f"bits must be 4 or 8, not {bits}")
        self.bias = linear.bias

    def forward(self, x):
        m = x.numel() // x.shape[-1]
        if m > self._ktune.max_batch:  # prefill: a scratch of its own, not kept (eager, outside any graph)
            scratch = torch.zeros(ops.quant_scratch_elements(self.bits, x.dtype, m, self.out_features,
                                                             self.in_features, self.group),
                                  dtype=torch.float32, device=x.device)
        else:  # decode: the shape's scratch, kept for every later step (CUDA graphs replay it)
            scratch = ops.quant_scratch(self.bits, x, self.out_features, self.in_features, self.group)
        if self.bits == 4:
            y = ops.linear_int4(x, self.qweight, self.scales, self.zeros, scratch, self.out_features,
                                self.in_features, self.group)
        else:
            y = ops.linear_int8(x, self.qweight, self.scales, scratch, self.out_features, self.in_features)
        return y if self.bias is None else y + self.bias

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, int{self.bits}"


def _decoder_layers(model):
    inner = getattr(model, "model", model)
    if not hasattr(inner, "layers"):
        raise TypeError("patch_model: expected a Llama-family model (model.model.layers)")
    return inner


def patch_model(model, weights="bf16", max_batch=8, max_positions=None, group=128, fuse_projections=True,
                quantize_lm_head=False):
    """Swaps the model's kernels for ktune's, in place (see the module's doc); returns the model.

    max_batch: the largest batch (tokens per decode step) whose weight-only linears keep their scratch buffers (one per
    shape, made on the shape's first call: run one eager step before capturing a CUDA graph); above it (prefill) a
    scratch per call;
    max_positions: rows of the RoPE caches (default config.max_position_embeddings); fuse_projections: q, k, v as one
    linear (qkv_proj) and gate, up as one (gate_up_proj): two launches fewer per layer, each reading more rows;
    quantize_lm_head: with INT4/INT8 weights, lm_head too (its bf16 weights are a third of what an INT4 step reads at
    Llama-3.2-3B's vocabulary; a tied embedding keeps its bf16 copy for the lookups)."""
    if weights not in ("bf16", "int4", "int8"):
        raise ValueError(f"weights must be bf16, int4 or int8, not {weights!r}")
    inner = _decoder_layers(model)
    cfg = model.config
    if getattr(cfg, "hidden_act", "silu") not in ("silu", "swish"):
        raise ValueError(f"patch_model: the MLP activation is {cfg.hidden_act}, ktune::swiglu computes silu")
    device = next(model.parameters()).device
    sh = _Shared()
    sh.max_batch = max_batch
    sh.group = group

    rotary = inner.rotary_emb
    positions = max_positions or cfg.max_position_embeddings
    sh.cos, sh.sin = ops.rope_cache(rotary.inv_freq.to(device), positions, float(rotary.attention_scaling))
    sh.sin_neg = -sh.sin  # RoPE's backward: the rotation by the negated angle

    for layer in inner.layers:
        attn, mlp = layer.self_attn, layer.mlp
        attn._ktune = sh
        attn.forward = types.MethodType(_attention_forward, attn)
        mlp.forward = types.MethodType(_mlp_forward, mlp)
        layer.forward = types.MethodType(_decoder_forward, layer)
        attn_names, mlp_names = ("q_proj", "k_proj", "v_proj", "o_proj"), ("gate_proj", "up_proj", "down_proj")
        if fuse_projections:
            _fuse_linears(attn, ("q_proj", "k_proj", "v_proj"), "qkv_proj")
            _fuse_linears(mlp, ("gate_proj", "up_proj"), "gate_up_proj")
            attn_names, mlp_names = ("qkv_proj", "o_proj"), ("gate_up_proj", "down_proj")
        for owner, names in ((attn, attn_names), (mlp, mlp_names)):
            for name in names:
                lin = getattr(owner, name)
                if weights == "bf16":
                    lin.forward = types.MethodType(_dense_forward, lin)
                else:
                    setattr(owner, name, QuantLinear(lin, 4 if weights == "int4" else 8, sh))
    inner.norm.forward = types.MethodType(_norm_forward, inner.norm)
    if isinstance(getattr(model, "lm_head", None), torch.nn.Linear):
        if quantize_lm_head and weights != "bf16":
            model.lm_head = QuantLinear(model.lm_head, 4 if weights == "int4" else 8, sh)
        else:
            model.lm_head.forward = types.MethodType(_dense_forward, model.lm_head)
    model._ktune = sh
    return model


@functools.lru_cache(maxsize=None)
def _pick_chunk(vocab):
    """The divisor of `vocab` in [64, 4096] nearest its square root, or None (a small or prime-ish vocabulary)."""
    if vocab < 4096:
        return None
    divisors = [c for c in range(64, 4097) if vocab % c == 0]
    return min(divisors, key=lambda c: abs(c * c - vocab)) if divisors else None


def greedy_tokens(logits):
    """The greedy next token of each sequence, [B, 1] int64, from logits [B, S, V] (their last position): argmax's
    answer (the first maximal index) in two passes. torch reduces one long row in a single block (25.6 us for V =
    128,256 at batch 1 on an H100, against 10.4 us for these passes' four kernels: docs/performance.md, s20i); the
    maxima of V / C rows of C elements first, then the row of those maxima, spread over the SMs. Capturable in a CUDA
    graph."""
    x = logits[:, -1]
    b, v = x.shape
    c = _pick_chunk(v)
    if c is None:
        return x.argmax(-1, keepdim=True)
    values, within = x.view(b, v // c, c).max(-1)  # the first maximum of each chunk
    chunk = values.argmax(-1, keepdim=True)  # the first chunk holding the row's maximum
    return torch.add(within.gather(-1, chunk), chunk, alpha=c)


def decode_step(model, input_ids, position_ids, cache):
    """Logits [B, 1, vocab] of one decode step of a patched model: input_ids and position_ids [B, 1] on the device,
    cache the StaticCache the prefill filled. Each residual add is fused with the RMSNorm that follows it (the next
    layer's input norm, the final norm). Capturable in a CUDA graph with static input tensors."""
    inner = model.model
    layers = inner.layers
    # Every layer's RoPE positions and attention lengths, made once (three small kernels a layer fewer)
    positions = position_ids.expand(input_ids.shape[0], 1).reshape(-1).to(torch.int32)
    step = (positions, positions + 1)
    # The layers whose k, v the step writes itself (_static_layer) advance their lengths as HF's update would; here
    # rather than after the last layer, where the add would stand between the final norm and lm_head and keep lm_head
    # from launching early (programmatic launch). The step reads none of these lengths (HF's update, which does, serves
    # only the other layers).
    wrote = [layer.cumulative_length for i in range(len(layers))
             if (layer := _static_layer(cache, i, input_ids.shape[0])) is not None
             and isinstance(getattr(layer, "cumulative_length", None), torch.Tensor)]
    if wrote:
        torch._foreach_add_(wrote, 1)
    x = inner.embed_tokens(input_ids)
    first = layers[0].input_layernorm
    h, residual = ops.rms_norm(x, first.weight, first.variance_epsilon), x
    for i, layer in enumerate(layers):
        a, _ = layer.self_attn(hidden_states=h, attention_mask=None, position_ids=position_ids, cache=cache,
                               ktune_positions=step)
        post = layer.post_attention_layernorm
        h, residual = ops.add_rms_norm(a, residual, post.weight, post.variance_epsilon)
        m = layer.mlp(h)
        norm = layers[i + 1].input_layernorm if i + 1 < len(layers) else inner.norm
        h, residual = ops.add_rms_norm(m, residual, norm.weight, norm.variance_epsilon)
    return model.lm_head(h)
