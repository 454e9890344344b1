import time, torch
torch.set_num_threads(1)
from transformers import DeepseekV4Config, DeepseekV4ForCausalLM
from phasebench.tokenization import load_tokenizer
tok = load_tokenizer("deepseek-v4")
print(len(tok.hf), tok.hf.bos_token, tok.hf.bos_token_id, bool(tok.hf.chat_template))
cfg = DeepseekV4Config(vocab_size=len(tok.hf), hidden_size=32, moe_intermediate_size=16, num_hidden_layers=2,
    num_attention_heads=2, head_dim=16, q_lora_rank=16, n_routed_experts=2, num_experts_per_tok=1, n_shared_experts=1,
    layer_types=["compressed_sparse_attention","heavily_compressed_attention"], mlp_layer_types=["moe","moe"],
    hc_mult=2, sliding_window=16, o_groups=1, o_lora_rank=8, index_n_heads=2, index_head_dim=16, index_topk=8,
    max_position_embeddings=4096, partial_rotary_factor=0.5, bos_token_id=tok.hf.bos_token_id, eos_token_id=tok.hf.eos_token_id)
torch.manual_seed(0)
m = DeepseekV4ForCausalLM(cfg).eval()
print(sum(p.numel() for p in m.parameters()))
for n, mod in m.named_modules():
    if hasattr(mod, "position_bias"): print(n, mod.position_bias.shape, mod.position_bias.abs().sum())
ids = torch.randint(0, 1000, (1, 300))
t=time.time()
with torch.no_grad(): out = m(ids, use_cache=True)
print(time.time()-t, type(out.past_key_values), [type(l).__name__ for l in out.past_key_values.layers])
