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
"""

from __future__ import annotations

import math

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


def _rope(x: torch.Tensor, base: float) -> torch.Tensor:
    """Rotary embedding of ``x`` (B, H, T, D) at positions 0..T-1."""
    T, D = x.shape[-2], x.shape[-1]
    inv = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.float32, device=x.device) / D))
    ang = torch.arange(T, dtype=torch.float32, device=x.device)[:, None] * inv[None, :]
    cos, sin = ang.cos(), ang.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cfg = self.cfg
        B, T, _ = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)
        qr, kr = _rope(q, cfg.rope_base), _rope(k, cfg.rope_base)
        if cfg.attention == "full":
            y = F.scaled_dot_product_attention(qr, kr, v, is_causal=True)
            return self.out(y.transpose(1, 2).reshape(B, T, -1))
        scale = 1.0 / math.sqrt(self.dh)
        L = cfg.local
        pos = torch.arange(T, device=x.device)
        # raw local band: query t sees keys t-L+1..t (slot L-1 is t itself)
        kb = F.pad(kr, (0, 0, L - 1, 0)).unfold(2, L, 1)  # (B, H, T, dh, L)
        vb = F.pad(v, (0, 0, L - 1, 0)).unfold(2, L, 1)
        band = torch.einsum("bhtd,bhtdl->bhtl", qr, kb) * scale
        offset = torch.arange(L, device=x.device) - (L - 1)  # key position minus t
        band = band.masked_fill(~((pos[:, None] + offset[None, :]) >= 0), float("-inf"))
        kc, vc, ends = self._compress(x, k, v)  # (B, H, J, dh), ends: (J,)
        comp = (q @ kc.transpose(-1, -2)) * scale  # (B, H, T, J)
        comp = comp.masked_fill(~(ends[None, :] <= pos[:, None]), float("-inf"))
        att = torch.cat([band, comp], dim=-1).softmax(-1)
        y = torch.einsum("bhtl,bhtdl->bhtd", att[..., :L], vb) + att[..., L:] @ vc
        return self.out(y.transpose(1, 2).reshape(B, T, -1))

    def _compress(
        self, x: torch.Tensor, k: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
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
            g = self.gate(x).transpose(1, 2).unfold(2, W, S)  # (B, H, J, W)
            w = (g + self.slot_bias[None, :, None, :]).softmax(-1)
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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x).transpose(1, 2)
        h = self.conv(F.pad(h, (self.cfg.conv - 1, 0))).transpose(1, 2)  # causal
        x = x + self.attn(h)
        return x + self.mlp(self.ln2(x))


class PhaseRefModel(PreTrainedModel, GenerationMixin):
    """The reference causal LM; ``logits`` for every position, no KV cache (the sequences are
    short, and generation re-runs the prefix, which keeps the compressed grid exact)."""

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
        x = self.components(self.component_ids[input_ids].long()).sum(2)
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x)

    def logits_at(self, h: torch.Tensor) -> torch.Tensor:
        """Logits over the vocabulary for hidden states ``h`` (..., d)."""
        return self.head(h) @ self.token_embeddings().T

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        logits_to_keep: int = 0,
        **kwargs,
    ) -> CausalLMOutput:
        """Logits for every position, or for the last ``logits_to_keep`` ones (generation asks
        for 1; the full vocabulary at every position would dominate the cost)."""
        if attention_mask is not None and not bool(attention_mask.all()):
            h = torch.zeros(*input_ids.shape, self.config.d_model, device=input_ids.device)
            for i in range(input_ids.shape[0]):
                keep = attention_mask[i].bool()
                if keep.any():
                    h[i, keep] = self.hidden(input_ids[i, keep][None])[0]
        else:
            h = self.hidden(input_ids)
        logits = self.logits_at(h[:, -logits_to_keep:] if logits_to_keep else h)
        loss = None
        if labels is not None and not logits_to_keep:
            loss = F.cross_entropy(
                logits[:, :-1].reshape(-1, logits.shape[-1]),
                labels[:, 1:].reshape(-1),
                ignore_index=-100,
            )
        return CausalLMOutput(loss=loss, logits=logits)

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # no KV cache: each generation step re-runs the whole (short) sequence

    def prepare_inputs_for_generation(self, input_ids, attention_mask=None, **kwargs) -> dict:
        return {"input_ids": input_ids, "attention_mask": attention_mask, "logits_to_keep": 1}


def register_auto_classes() -> None:
    """Make ``AutoConfig``/``AutoModelForCausalLM`` load ``phasebench_ref`` folders (lm-eval's
    ``hf`` backend uses them). Called explicitly by phasebench's entry points, never on import."""
    from transformers import AutoConfig, AutoModelForCausalLM

    try:
        AutoConfig.register(PhaseRefConfig.model_type, PhaseRefConfig)
        AutoModelForCausalLM.register(PhaseRefConfig, PhaseRefModel)
    except ValueError:  # already registered in this process
        pass
