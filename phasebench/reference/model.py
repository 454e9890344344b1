"""A small causal LM with full attention or CSA-like chunked KV compression.

Every variant shares one architecture (token embedding as a sum of component embeddings, a
causal depthwise convolution over 2 tokens before each attention, RoPE, a small MLP) and differs
only in how attention sees distant context:

* ``full``: every earlier token, raw (the negative control);
* ``gate`` / ``mean``: a short raw local window plus compressed entries. Entry ``j`` packs the
  keys and values of the ``W`` tokens ``[j*S, j*S + W)`` (the grid anchored at absolute position
  0) into one key and one value, weighted by a softmax over the window of a learned per-token gate
  score plus a learned per-slot bias (``gate``), or uniformly (``mean``). A query at position
  ``t`` sees entry ``j`` only when the whole window lies before it (``j*S + W <= t``), so nothing
  leaks from the future. Compressed entries carry no rotary phase; raw local keys do.

Because the grid is fixed in absolute positions, a token's position modulo ``S`` decides which
slots of which windows it lands in: the hidden coordinate phasebench measures.

Left padding (lm-eval pads batches on the left) would move every absolute position, so rows with
padding are run one by one on their unpadded tokens; positions always start at 0 at the first
real token.

Generation keeps a :class:`StepCache` (per layer: the keys, values and gate scores of every token
so far, the compressed entries built from them, the convolution's last input) when the batch has
no padding, so each new token costs one position instead of the whole sequence; the grid stays
anchored at position 0 because the cache counts positions from the first token. A padded batch
generates without it (each step re-runs the unpadded rows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import nn
from torch.nn import functional as F
from transformers import PretrainedConfig, PreTrainedModel
from transformers.generation import GenerationMixin
from transformers.modeling_outputs import CausalLMOutput

ATTENTION_KINDS = ("full", "gate", "mean")


class PhaseRefConfig(PretrainedConfig):
    """Hyper-parameters of a reference model (``attention`` picks the variant)."""

    model_type = "phasebench_ref"

    def __init__(
        self,
        vocab_size: int = 0,
        n_components: int = 0,
        max_components: int = 3,
        d_model: int = 64,
        n_layer: int = 2,
        n_head: int = 4,
        d_ff: int = 128,
        conv: int = 2,
        attention: str = "full",
        window: int = 8,
        stride: int = 4,
        local: int = 4,
        rope_base: float = 10000.0,
        max_position_embeddings: int = 2048,
        **kwargs,
    ) -> None:
        if attention not in ATTENTION_KINDS:
            raise ValueError(f"'attention' must be one of {ATTENTION_KINDS} (got {attention!r})")
        self.vocab_size = vocab_size
        self.n_components = n_components
        self.max_components = max_components
        self.d_model = d_model
        self.n_layer = n_layer
        self.n_head = n_head
        self.d_ff = d_ff
        self.conv = conv
        self.attention = attention
        self.window = window
        self.stride = stride
        self.local = local
        self.rope_base = rope_base
        #: No learned positions; this is the context lm-eval assumes (it reads this field).
        self.max_position_embeddings = max_position_embeddings
        kwargs.setdefault("tie_word_embeddings", False)
        super().__init__(**kwargs)


@lru_cache(maxsize=64)
def _rope_table(start: int, T: int, D: int, base: float, device: torch.device):
    """cos and sin (T, D/2) of the rotary angles at positions start..start+T-1 (computed once per
    shape: every layer and every batch of one length asks for the same table). Built outside
    inference mode, so a table first made while evaluating can be used while training."""
    with torch.inference_mode(False), torch.no_grad():
        inv = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.float32, device=device) / D))
        ang = torch.arange(start, start + T, dtype=torch.float32, device=device)[:, None]
        ang = ang * inv[None, :]
        return ang.cos(), ang.sin()


def _rope(x: torch.Tensor, base: float, start: int = 0) -> torch.Tensor:
    """Rotary embedding of ``x`` (B, H, T, D) at positions start..start+T-1."""
    cos, sin = _rope_table(start, x.shape[-2], x.shape[-1], base, x.device)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


@dataclass
class LayerState:
    """What one layer keeps between generation steps (every tensor covers positions 0..T-1)."""

    conv_in: torch.Tensor  # (B, conv - 1, d): the convolution's last inputs
    k: torch.Tensor  # (B, H, T, dh) keys before RoPE (the compressed entries pool these)
    kr: torch.Tensor  # (B, H, T, dh) keys with RoPE (the raw keys attention sees)
    v: torch.Tensor  # (B, H, T, dh)
    g: torch.Tensor | None = None  # (B, H, T) gate scores (``gate`` only)
    kc: torch.Tensor | None = None  # (B, H, J, dh) compressed entries built so far
    vc: torch.Tensor | None = None


@dataclass
class StepCache:
    """The generation cache: how many positions the layers have seen, and each layer's state."""

    length: int
    layers: list[LayerState]


@dataclass
class PhaseRefOutput(CausalLMOutput):
    """``CausalLMOutput`` plus the generation cache (``cache`` is what generate passes back)."""

    cache: StepCache | None = None


class Attention(nn.Module):
    def __init__(self, cfg: PhaseRefConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.h = cfg.n_head
        self.dh = cfg.d_model // cfg.n_head
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)
        self.out = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        if cfg.attention == "gate":
            self.gate = nn.Linear(cfg.d_model, cfg.n_head)
            self.slot_bias = nn.Parameter(torch.zeros(cfg.n_head, cfg.window))

    def empty_state(self, x: torch.Tensor) -> LayerState:
        """The state before position 0 (no tokens, no entries, zeros before the convolution)."""
        B, d = x.shape[0], self.cfg.d_model
        none = x.new_zeros(B, self.h, 0, self.dh)
        gate = x.new_zeros(B, self.h, 0) if self.cfg.attention == "gate" else None
        return LayerState(x.new_zeros(B, self.cfg.conv - 1, d), none, none, none, gate, none, none)

    def forward(self, x: torch.Tensor, state: LayerState) -> tuple[torch.Tensor, LayerState]:
        """The attention output for ``x`` (B, n, d) at positions T0..T0+n-1, after the T0
        positions ``state`` holds (a whole sequence starts from :meth:`empty_state`), and the
        state after them."""
        cfg = self.cfg
        B, n, _ = x.shape
        T0 = state.k.shape[2]
        q, k, v = self.qkv(x).view(B, n, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)
        qr, kr = _rope(q, cfg.rope_base, T0), _rope(k, cfg.rope_base, T0)
        k_all, kr_all = torch.cat([state.k, k], 2), torch.cat([state.kr, kr], 2)
        v_all = torch.cat([state.v, v], 2)
        g_all = None
        if cfg.attention == "gate":
            g_all = torch.cat([state.g, self.gate(x).transpose(1, 2)], 2)  # (B, H, T)
        pos = T0 + torch.arange(n, device=x.device)
        if cfg.attention == "full":
            if T0 == 0:
                y = F.scaled_dot_product_attention(qr, kr_all, v_all, is_causal=True)
            else:
                seen = torch.arange(T0 + n, device=x.device)[None, :] <= pos[:, None]
                y = F.scaled_dot_product_attention(qr, kr_all, v_all, attn_mask=seen)
            new = LayerState(state.conv_in, k_all, kr_all, v_all)
            return self.out(y.transpose(1, 2).reshape(B, n, -1)), new
        scale = 1.0 / math.sqrt(self.dh)
        L, W, S = cfg.local, cfg.window, cfg.stride
        # raw local band: query t sees keys t-L+1..t (slot L-1 is t itself; zeros before 0)
        kb = F.pad(kr_all, (0, 0, max(0, L - 1 - T0), 0))[:, :, -(L - 1 + n) :].unfold(2, L, 1)
        vb = F.pad(v_all, (0, 0, max(0, L - 1 - T0), 0))[:, :, -(L - 1 + n) :].unfold(2, L, 1)
        band = torch.einsum("bhtd,bhtdl->bhtl", qr, kb) * scale  # kb, vb: (B, H, n, dh, L)
        offset = torch.arange(L, device=x.device) - (L - 1)  # key position minus t
        band = band.masked_fill(~((pos[:, None] + offset[None, :]) >= 0), float("-inf"))
        # the entries whose window completes with the new tokens (j*S + W <= T0 + n) join those
        # the state holds
        built = state.kc.shape[2]
        total = (T0 + n - W) // S + 1 if T0 + n >= W else 0
        kc, vc = state.kc, state.vc
        if total > built:
            lo, hi = built * S, (total - 1) * S + W
            gw = None if g_all is None else g_all[:, :, lo:hi]
            kn, vn = self._compress(k_all[:, :, lo:hi], v_all[:, :, lo:hi], gw)
            kc, vc = torch.cat([kc, kn], 2), torch.cat([vc, vn], 2)
        ends = torch.arange(total, device=x.device) * S + W
        comp = (q @ kc.transpose(-1, -2)) * scale  # (B, H, n, J)
        comp = comp.masked_fill(~(ends[None, :] <= pos[:, None]), float("-inf"))
        att = torch.cat([band, comp], dim=-1).softmax(-1)
        y = torch.einsum("bhtl,bhtdl->bhtd", att[..., :L], vb) + att[..., L:] @ vc
        new = LayerState(state.conv_in, k_all, kr_all, v_all, g_all, kc, vc)
        return self.out(y.transpose(1, 2).reshape(B, n, -1)), new

    def _compress(
        self, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The compressed entries (B, H, J, dh) of ``k`` and ``v`` (B, H, T, dh) on the grid
        anchored at their first position, weighted by the gate scores ``g`` (B, H, T) for
        ``gate``; entry j pools positions [j*S, j*S + W)."""
        cfg = self.cfg
        W, S = cfg.window, cfg.stride
        B, H, T, D = k.shape
        if T < W:
            empty = k.new_zeros(B, H, 0, D)
            return empty, empty
        kw = k.unfold(2, W, S)  # (B, H, J, D, W)
        vw = v.unfold(2, W, S)
        J = kw.shape[2]
        if cfg.attention == "gate":
            w = (g.unfold(2, W, S) + self.slot_bias[None, :, None, :]).softmax(-1)  # (B, H, J, W)
        else:
            w = k.new_full((B, H, J, W), 1.0 / W)
        return (kw * w[..., None, :]).sum(-1), (vw * w[..., None, :]).sum(-1)


class Block(nn.Module):
    def __init__(self, cfg: PhaseRefConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.conv = nn.Conv1d(cfg.d_model, cfg.d_model, cfg.conv, groups=cfg.d_model)
        self.attn = Attention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, cfg.d_ff), nn.GELU(), nn.Linear(cfg.d_ff, cfg.d_model)
        )

    def forward(self, x: torch.Tensor, state: LayerState) -> tuple[torch.Tensor, LayerState]:
        """``x`` (B, n, d) after the positions ``state`` holds; the output and the new state."""
        before = torch.cat([state.conv_in, self.ln1(x)], 1)  # causal: the last inputs, then x
        h = self.conv(before.transpose(1, 2)).transpose(1, 2)
        a, new = self.attn(h, state)
        new.conv_in = before[:, before.shape[1] - (self.cfg.conv - 1) :]
        x = x + a
        return x + self.mlp(self.ln2(x)), new


class PhaseRefModel(PreTrainedModel, GenerationMixin):
    """The reference causal LM: ``logits`` for every position; generation on unpadded batches
    keeps a :class:`StepCache` (a padded batch re-runs its unpadded rows at every step)."""

    config_class = PhaseRefConfig
    base_model_prefix = "phaseref"
    main_input_name = "input_ids"
    _supports_cache_class = False

    def __init__(self, config: PhaseRefConfig) -> None:
        super().__init__(config)
        cfg = config
        self.components = nn.Embedding(cfg.n_components, cfg.d_model, padding_idx=0)
        self.register_buffer(
            "component_ids",
            torch.zeros(cfg.vocab_size, cfg.max_components, dtype=torch.int32),
            persistent=True,
        )
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.05)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.3)

    @torch.no_grad()
    def retrieval_start(self) -> None:
        """Two starting points that make retrieval learnable in a CPU budget (applied once, before
        training; everything is then trained freely): each convolution starts as "this token
        plus the previous one", and each key projection starts equal to its query projection,
        so equal content already scores high."""
        d = self.config.d_model
        for block in self.blocks:
            block.conv.weight.fill_(1.0)
            block.conv.bias.zero_()
            block.attn.qkv.weight[d : 2 * d].copy_(block.attn.qkv.weight[:d])

    def token_embeddings(self) -> torch.Tensor:
        """(V, d): each token's embedding, the sum of its components' embeddings."""
        return self.components(self.component_ids.long()).sum(1)

    def hidden(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Final hidden states (B, T, d) of ``input_ids`` (B, T)."""
        return self.run(input_ids)[0]

    def run(
        self, input_ids: torch.Tensor, cache: StepCache | None = None
    ) -> tuple[torch.Tensor, StepCache]:
        """Final hidden states of ``input_ids`` after the positions ``cache`` holds (none: from
        position 0), and the cache after them."""
        x = self.components(self.component_ids[input_ids].long()).sum(2)
        states = []
        for i, block in enumerate(self.blocks):
            state = cache.layers[i] if cache else block.attn.empty_state(x)
            x, state = block(x, state)
            states.append(state)
        length = (cache.length if cache else 0) + input_ids.shape[1]
        return self.ln_f(x), StepCache(length, states)

    def logits_at(self, h: torch.Tensor) -> torch.Tensor:
        """Logits over the vocabulary for hidden states ``h`` (..., d)."""
        return self.head(h) @ self.token_embeddings().T

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        logits_to_keep: int = 0,
        cache: StepCache | None = None,
        use_cache: bool = False,
        **kwargs,
    ) -> PhaseRefOutput:
        """Logits for every position, or for the last ``logits_to_keep`` ones (generation asks
        for 1; the full vocabulary at every position would dominate the cost). With ``cache``,
        ``input_ids`` are the tokens after the positions it holds; ``use_cache`` returns the
        cache after this call, for a batch without padding (None for a padded one)."""
        padded = attention_mask is not None and not bool(attention_mask.all())
        if padded:
            if cache is not None:
                raise ValueError("a generation cache is kept for unpadded batches only")
            h = torch.zeros(*input_ids.shape, self.config.d_model, device=input_ids.device)
            for i in range(input_ids.shape[0]):
                keep = attention_mask[i].bool()
                if keep.any():
                    h[i, keep] = self.hidden(input_ids[i, keep][None])[0]
        else:
            h, cache = self.run(input_ids, cache)
        logits = self.logits_at(h[:, -logits_to_keep:] if logits_to_keep else h)
        loss = None
        if labels is not None and not logits_to_keep:
            loss = F.cross_entropy(
                logits[:, :-1].reshape(-1, logits.shape[-1]),
                labels[:, 1:].reshape(-1),
                ignore_index=-100,
            )
        kept = cache if use_cache and not padded else None
        return PhaseRefOutput(loss=loss, logits=logits, cache=kept)

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # not transformers' Cache: the model builds its own StepCache

    def prepare_inputs_for_generation(
        self, input_ids, attention_mask=None, cache=None, use_cache=True, **kwargs
    ) -> dict:
        """The whole sequence on the first step (or on every step of a padded batch), then only
        the tokens the cache has not seen."""
        if cache is not None:
            input_ids = input_ids[:, cache.length :]
        return {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "logits_to_keep": 1,
            "cache": cache,
            "use_cache": bool(use_cache),
        }


def register_auto_classes() -> None:
    """Make ``AutoConfig``/``AutoModelForCausalLM`` load ``phasebench_ref`` folders (lm-eval's
    ``hf`` backend uses them). Called explicitly by phasebench's entry points, never on import."""
    from transformers import AutoConfig, AutoModelForCausalLM

    try:
        AutoConfig.register(PhaseRefConfig.model_type, PhaseRefConfig)
        AutoModelForCausalLM.register(PhaseRefConfig, PhaseRefModel)
    except ValueError:  # already registered in this process
        pass
