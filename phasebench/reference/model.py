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
        return _angles(start, T, D, base, device)


def _angles(start: int, T: int, D: int, base: float, device: torch.device):
    inv = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.float32, device=device) / D))
    ang = torch.arange(start, start + T, dtype=torch.float32, device=device)[:, None] * inv[None, :]
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

    def _project(self, x: torch.Tensor, start: int):
        """q, k, v (B, H, T, dh), q and k with RoPE at positions start.., and the gate scores."""
        B, T, _ = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)
        base = self.cfg.rope_base
        g = self.gate(x).transpose(1, 2) if self.cfg.attention == "gate" else None
        return q, k, v, _rope(q, base, start), _rope(k, base, start), g

    def forward(
        self, x: torch.Tensor, state: LayerState | None = None, keep: bool = False
    ) -> tuple[torch.Tensor, LayerState | None]:
        """The attention output for ``x`` (B, T, d); with ``state``, ``x`` continues the
        sequence that state holds. ``keep`` returns the state after ``x`` (else None)."""
        if state is not None:
            return self._step(x, state)
        cfg = self.cfg
        B, T, _ = x.shape
        q, k, v, qr, kr, g = self._project(x, 0)
        if cfg.attention == "full":
            y = F.scaled_dot_product_attention(qr, kr, v, is_causal=True)
            new = LayerState(x[:, :0], k, kr, v) if keep else None
            return self.out(y.transpose(1, 2).reshape(B, T, -1)), new
        scale = 1.0 / math.sqrt(self.dh)
        L = cfg.local
        pos = torch.arange(T, device=x.device)
        # raw local band: query t sees keys t-L+1..t (slot L-1 is t itself)
        kb = F.pad(kr, (0, 0, L - 1, 0)).unfold(2, L, 1)  # (B, H, T, dh, L)
        vb = F.pad(v, (0, 0, L - 1, 0)).unfold(2, L, 1)
        band = torch.einsum("bhtd,bhtdl->bhtl", qr, kb) * scale
        offset = torch.arange(L, device=x.device) - (L - 1)  # key position minus t
        band = band.masked_fill(~((pos[:, None] + offset[None, :]) >= 0), float("-inf"))
        kc, vc, ends = self._compress(k, v, g)  # (B, H, J, dh), ends: (J,)
        comp = (q @ kc.transpose(-1, -2)) * scale  # (B, H, T, J)
        comp = comp.masked_fill(~(ends[None, :] <= pos[:, None]), float("-inf"))
        att = torch.cat([band, comp], dim=-1).softmax(-1)
        y = torch.einsum("bhtl,bhtdl->bhtd", att[..., :L], vb) + att[..., L:] @ vc
        new = LayerState(x[:, :0], k, kr, v, g, kc, vc) if keep else None
        return self.out(y.transpose(1, 2).reshape(B, T, -1)), new

    def _step(self, x: torch.Tensor, state: LayerState) -> tuple[torch.Tensor, LayerState]:
        """``x`` (B, n, d) at positions T0..T0+n-1 after the T0 positions ``state`` holds: the
        same computation as the whole sequence, for the new positions only."""
        cfg = self.cfg
        B, n, _ = x.shape
        T0 = state.k.shape[2]
        q, k, v, qr, kr, g = self._project(x, T0)
        k_all, kr_all = torch.cat([state.k, k], 2), torch.cat([state.kr, kr], 2)
        v_all = torch.cat([state.v, v], 2)
        g_all = None if g is None else torch.cat([state.g, g], 2)
        pos = T0 + torch.arange(n, device=x.device)
        if cfg.attention == "full":
            seen = torch.arange(T0 + n, device=x.device)[None, :] <= pos[:, None]
            y = F.scaled_dot_product_attention(qr, kr_all, v_all, attn_mask=seen)
            new = LayerState(x[:, :0], k_all, kr_all, v_all)
            return self.out(y.transpose(1, 2).reshape(B, n, -1)), new
        scale = 1.0 / math.sqrt(self.dh)
        L, W, S = cfg.local, cfg.window, cfg.stride
        # the band's keys: the L-1 positions before T0 (zeros before position 0), then the new
        tail = F.pad(kr_all, (0, 0, max(0, L - 1 - T0), 0))[:, :, -(L - 1 + n) :]
        vtail = F.pad(v_all, (0, 0, max(0, L - 1 - T0), 0))[:, :, -(L - 1 + n) :]
        kb, vb = tail.unfold(2, L, 1), vtail.unfold(2, L, 1)  # (B, H, n, dh, L)
        band = torch.einsum("bhtd,bhtdl->bhtl", qr, kb) * scale
        offset = torch.arange(L, device=x.device) - (L - 1)
        band = band.masked_fill(~((pos[:, None] + offset[None, :]) >= 0), float("-inf"))
        # entries whose window completes with the new tokens: j*S + W <= T0 + n
        built = state.kc.shape[2]
        total = (T0 + n - W) // S + 1 if T0 + n >= W else 0
        kc, vc = state.kc, state.vc
        if total > built:
            lo, hi = built * S, (total - 1) * S + W
            gw = None if g_all is None else g_all[:, :, lo:hi]
            kn, vn, _ = self._compress(k_all[:, :, lo:hi], v_all[:, :, lo:hi], gw)
            kc, vc = torch.cat([kc, kn], 2), torch.cat([vc, vn], 2)
        ends = torch.arange(total, device=x.device) * S + W
        comp = (q @ kc.transpose(-1, -2)) * scale
        comp = comp.masked_fill(~(ends[None, :] <= pos[:, None]), float("-inf"))
        att = torch.cat([band, comp], dim=-1).softmax(-1)
        y = torch.einsum("bhtl,bhtdl->bhtd", att[..., :L], vb) + att[..., L:] @ vc
        new = LayerState(x[:, :0], k_all, kr_all, v_all, g_all, kc, vc)
        return self.out(y.transpose(1, 2).reshape(B, n, -1)), new

    def _compress(
        self, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The compressed entries of ``k`` and ``v`` (B, H, T, dh) on the grid anchored at
        their first position, weighted by the gate scores ``g`` (B, H, T) for ``gate``."""
        cfg = self.cfg
        W, S = cfg.window, cfg.stride
        B, H, T, D = k.shape
        if T < W:
            empty = k.new_zeros(B, H, 0, D)
            return empty, empty, torch.zeros(0, dtype=torch.long, device=k.device)
        kw = k.unfold(2, W, S)  # (B, H, J, D, W)
        vw = v.unfold(2, W, S)
        J = kw.shape[2]
        if cfg.attention == "gate":
            w = (g.unfold(2, W, S) + self.slot_bias[None, :, None, :]).softmax(-1)  # (B, H, J, W)
        else:
            w = k.new_full((B, H, J, W), 1.0 / W)
        kc = (kw * w[..., None, :]).sum(-1)
        vc = (vw * w[..., None, :]).sum(-1)
        ends = torch.arange(J, device=k.device) * S + W
        return kc, vc, ends


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

    def forward(
        self, x: torch.Tensor, state: LayerState | None = None, keep: bool = False
    ) -> tuple[torch.Tensor, LayerState | None]:
        c = self.cfg.conv - 1
        n = self.ln1(x)
        if state is None:
            before = F.pad(n.transpose(1, 2), (c, 0))  # causal: zeros before position 0
        else:
            before = torch.cat([state.conv_in, n], 1).transpose(1, 2)
        h = self.conv(before).transpose(1, 2)
        a, new = self.attn(h, state, keep or state is not None)
        if new is not None:
            new.conv_in = before.transpose(1, 2)[:, before.shape[2] - c :]
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
        self, input_ids: torch.Tensor, cache: StepCache | None = None, keep: bool = False
    ) -> tuple[torch.Tensor, StepCache | None]:
        """Final hidden states of ``input_ids`` (after the positions ``cache`` holds, if any),
        and the cache after them when ``keep`` (or a cache came in)."""
        x = self.components(self.component_ids[input_ids].long()).sum(2)
        states = []
        for i, block in enumerate(self.blocks):
            x, state = block(x, cache.layers[i] if cache else None, keep)
            states.append(state)
        if cache is None and not keep:
            return self.ln_f(x), None
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
            h, cache = self.run(input_ids, cache, keep=use_cache)
        logits = self.logits_at(h[:, -logits_to_keep:] if logits_to_keep else h)
        loss = None
        if labels is not None and not logits_to_keep:
            loss = F.cross_entropy(
                logits[:, :-1].reshape(-1, logits.shape[-1]),
                labels[:, 1:].reshape(-1),
                ignore_index=-100,
            )
        return PhaseRefOutput(loss=loss, logits=logits, cache=None if padded else cache)

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
