"""The numpy forward of a real model (1 thread) against its BLAS work alone and onnxruntime on the same graph.

Loads MODEL (``minilm-l6``, the BERT encoder, or ``smollm2-135m``, the Llama decoder;
``sparsedebug.sources.models``, fetched on first use), runs one sequence of TOKENS token ids
through it, and times, interleaved in one process (``core.timing.interleaved``, medians,
p50/p95/p99), with one BLAS thread (threadpoolctl; onnxruntime with one intra-op thread):

``numpy fp32``       ``Transformer.hidden``: the forward the quality study runs
``numpy fp16 emu``   the same forward on the replay's kernels at fp16 (operands rounded to fp16,
                     fp32 accumulation): the forward the playbook walk replays
``numpy GEMMs``      the forward's linear products alone (the same prepared weights and calls, bias
                     included, on copies of their inputs): the floor of the numpy forward
``numpy GEMMs x2``   each of those products twice in a row: the second runs with its weight (and
                     OpenBLAS's packing of it) in cache, so ``x2 - GEMMs`` is what the products cost
                     without fetching the weights from memory (onnxruntime streams its pre-packed weights inside
                     the product, where OpenBLAS copies each into its packed layout first)
``numpy BLAS``       those and the attention's two batched products per block: every BLAS call of
                     the forward; ``numpy fp32 - numpy BLAS`` is the forward's elementwise work
``onnxruntime``      the same graph built from the same weights as ONNX (Gather, LayerNormalization
                     or RMS norm, MatMul, rotary, Softmax, Erf GELU or SiLU), fp32, all graph
                     optimisations; only where ``onnx`` and ``onnxruntime`` are installed
                     (benchmark-only extras: ``pip install onnx onnxruntime``)
``onnxrt GEMMs``     onnxruntime's MatMuls of that graph alone (pre-packed weights)

The header names OpenBLAS's kernel family. OpenBLAS picks it at load time from the CPU, unless
``OPENBLAS_CORETYPE`` forces one: an environment that pins ``Haswell`` (the AVX2 kernels) on a CPU
with AVX-512 halves numpy's fp32 products while onnxruntime still uses AVX-512 (run the benchmark
with ``env -u OPENBLAS_CORETYPE`` for OpenBLAS's own choice). Every variant's output is first
checked against the numpy fp32 forward. Ratios are variant
median / reference median; the last lines give the ratios the issue sets targets for.
Usage: python benchmarks/forward.py [--model minilm-l6] [--tokens 128] [--rounds 15]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from sparsedebug.core.stats import median, percentiles
from sparsedebug.core.timing import interleaved
from sparsedebug.sources.models.base import Batch, Transformer
from sparsedebug.sources.models.bert import BertEncoder
from sparsedebug.sources.models.llama import LlamaDecoder, rope_tables
from sparsedebug.sources.models.load import load_model
from sparsedebug.sources.replay.checkpoint.kernels import dense_kernels


class Graph:
    """An ONNX graph under construction: constants and nodes, each node's output named after it."""

    def __init__(self) -> None:
        from onnx import numpy_helper

        self.numpy_helper = numpy_helper
        self.nodes: list[Any] = []
        self.inits: list[Any] = []

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], out: str, **attrs: Any) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def matmul(self, x: str, model: Transformer, name: str) -> str:
        """``x @ W.T (+ b)`` of linear ``name``, the weight stored transposed as onnxruntime wants it."""
        y = self.node("MatMul", [x, self.const(name + ".wt", model.tensor(name + ".weight").T)], name + ".mm")
        if model.linears[name].bias:
            y = self.node("Add", [y, self.const(name + ".b", model.tensor(name + ".bias"))], name + ".out")
        return y

    def attention(self, q: str, k: str, v: str, p: str, heads: int, kv_heads: int, dim: int, tokens: int,
                  mask: str | None) -> str:
        """Scaled dot-product attention of ``(T, H, hd)`` queries and ``(T, KV, hd)`` keys/values, ``(T, H * hd)`` out."""
        if kv_heads != heads:
            shape = self.const(p + "gqa_shape", np.array([tokens, kv_heads, heads // kv_heads, dim], dtype=np.int64))
            merged = self.const(p + "gqa_merged", np.array([tokens, heads, dim], dtype=np.int64))
            axis = self.const(p + "gqa_axis", np.array([2], dtype=np.int64))
            k, v = (self.node("Reshape", [self.node("Expand", [self.node("Unsqueeze", [t, axis], p + t + ".u"), shape],
                                                    p + t + ".e"), merged], p + t + ".r") for t in (k, v))
        qh = self.node("Transpose", [q], p + "qh", perm=[1, 0, 2])
        kh = self.node("Transpose", [k], p + "kh", perm=[1, 2, 0])
        vh = self.node("Transpose", [v], p + "vh", perm=[1, 0, 2])
        scale = self.const(p + "scale", np.array(1.0 / np.sqrt(dim), dtype=np.float32))
        scores = self.node("Mul", [self.node("MatMul", [qh, kh], p + "scores"), scale], p + "scaled")
        if mask is not None:
            scores = self.node("Add", [scores, mask], p + "masked")
        probs = self.node("Softmax", [scores], p + "probs", axis=-1)
        context = self.node("Transpose", [self.node("MatMul", [probs, vh], p + "ctx")], p + "ctx_t", perm=[1, 0, 2])
        merged_shape = self.const(p + "ctx_shape", np.array([tokens, heads * dim], dtype=np.int64))
        return self.node("Reshape", [context, merged_shape], p + "ctx_merged")


def bert_graph(model: BertEncoder, tokens: int) -> tuple[Graph, str]:
    """The encoder on ``tokens`` ids: embeddings, post-norm blocks, Erf GELU."""
    cfg = model.config
    g = Graph()
    heads, dim = cfg.heads, cfg.hidden // cfg.heads

    def norm(x: str, prefix: str) -> str:
        w, b = g.const(prefix + ".w", model.tensor(prefix + ".weight")), g.const(prefix + ".b", model.tensor(prefix + ".bias"))
        return g.node("LayerNormalization", [x, w, b], prefix + ".out", axis=-1, epsilon=cfg.eps)

    words = g.const("words", model.tensor("embeddings.word_embeddings.weight"))
    positions = g.const("positions", model.tensor("embeddings.position_embeddings.weight")[:tokens])
    segment = g.const("segment", model.tensor("embeddings.token_type_embeddings.weight")[0])
    x = g.node("Gather", [words, "ids"], "embedded", axis=0)
    h = norm(g.node("Add", [g.node("Add", [x, positions], "with_positions"), segment], "with_segment"), "embeddings.LayerNorm")
    split = g.const("split_shape", np.array([tokens, heads, dim], dtype=np.int64))
    root2, one, half = (g.const(n, np.array(v, dtype=np.float32)) for n, v in (("root2", np.sqrt(2.0)), ("one", 1.0), ("half", 0.5)))
    for b in range(cfg.blocks):
        p = f"encoder.layer.{b}."
        q, k, v = (g.node("Reshape", [g.matmul(h, model, p + f"attention.self.{n}"), split], p + n + ".split")
                   for n in ("query", "key", "value"))
        context = g.attention(q, k, v, p, heads, heads, dim, tokens, None)
        x = norm(g.node("Add", [g.matmul(context, model, p + "attention.output.dense"), h], p + "attn_res"),
                 p + "attention.output.LayerNorm")
        inner = g.matmul(x, model, p + "intermediate.dense")
        erf = g.node("Erf", [g.node("Div", [inner, root2], p + "div")], p + "erf")
        gelu = g.node("Mul", [g.node("Mul", [inner, g.node("Add", [erf, one], p + "erf1")], p + "g1"), half], p + "gelu")
        h = norm(g.node("Add", [g.matmul(gelu, model, p + "output.dense"), x], p + "ffn_res"), p + "output.LayerNorm")
    return g, h


def llama_graph(model: LlamaDecoder, tokens: int) -> tuple[Graph, str]:
    """The decoder on ``tokens`` ids: embeddings, pre-norm blocks (RMS norm as onnxruntime fuses it), adjacent-pair
    rotary, grouped-query causal attention, SwiGLU; the hidden states before the final norm."""
    cfg = model.config
    g = Graph()
    dim = cfg.head_dim
    two, eps = g.const("two", np.array(2.0, dtype=np.float32)), g.const("eps", np.array(cfg.rms_eps, dtype=np.float32))
    cos, sin = rope_tables((tokens,), dim, cfg.rope_base)
    cos_c, sin_c = g.const("cos", cos[:, None, :, None]), g.const("sin", sin[:, None, :, None])
    mask = g.const("causal", np.triu(np.full((tokens, tokens), -np.inf, dtype=np.float32), 1))
    pair_index = [g.const(f"pair{i}", np.array([i], dtype=np.int64)) for i in (0, 1)]

    def rms(x: str, name: str) -> str:
        mean = g.node("ReduceMean", [g.node("Pow", [x, two], name + ".sq")], name + ".ms", axes=[-1], keepdims=1)
        root = g.node("Sqrt", [g.node("Add", [mean, eps], name + ".eps")], name + ".rms")
        return g.node("Mul", [g.node("Div", [x, root], name + ".div"), g.const(name + ".w", model.tensor(name + ".weight"))],
                      name + ".out")

    def rope(x: str, heads: int, name: str) -> str:
        pairs = g.node("Reshape", [x, g.const(name + ".pairs", np.array([tokens, heads, dim // 2, 2], dtype=np.int64))],
                       name + ".p")
        even, odd = (g.node("Gather", [pairs, idx], name + f".{i}", axis=3) for i, idx in zip("eo", pair_index, strict=True))
        new_even = g.node("Sub", [g.node("Mul", [even, cos_c], name + ".ec"), g.node("Mul", [odd, sin_c], name + ".os")],
                          name + ".ne")
        new_odd = g.node("Add", [g.node("Mul", [even, sin_c], name + ".es"), g.node("Mul", [odd, cos_c], name + ".oc")],
                         name + ".no")
        joined = g.node("Concat", [new_even, new_odd], name + ".cat", axis=3)
        return g.node("Reshape", [joined, g.const(name + ".back", np.array([tokens, heads, dim], dtype=np.int64))], name + ".r")

    h = g.node("Gather", [g.const("embeddings", model.tensor("token_embd.weight")), "ids"], "embedded", axis=0)
    for b in range(cfg.blocks):
        p = f"blk.{b}."
        x = rms(h, p + "attn_norm")
        split = {n: g.const(p + f"{n}.shape", np.array([tokens, heads, dim], dtype=np.int64))
                 for n, heads in (("q", cfg.heads), ("kv", cfg.kv_heads))}
        q = rope(g.node("Reshape", [g.matmul(x, model, p + "attn_q"), split["q"]], p + "q"), cfg.heads, p + "rq")
        k = rope(g.node("Reshape", [g.matmul(x, model, p + "attn_k"), split["kv"]], p + "k"), cfg.kv_heads, p + "rk")
        v = g.node("Reshape", [g.matmul(x, model, p + "attn_v"), split["kv"]], p + "v")
        context = g.attention(q, k, v, p, cfg.heads, cfg.kv_heads, dim, tokens, mask)
        h = g.node("Add", [h, g.matmul(context, model, p + "attn_output")], p + "attn_res")
        x = rms(h, p + "ffn_norm")
        gate = g.matmul(x, model, p + "ffn_gate")
        silu = g.node("Mul", [gate, g.node("Sigmoid", [gate], p + "sig")], p + "silu")
        inner = g.node("Mul", [silu, g.matmul(x, model, p + "ffn_up")], p + "swiglu")
        h = g.node("Add", [h, g.matmul(inner, model, p + "ffn_down")], p + "ffn_res")
    return g, h


def onnx_session(model: Transformer, tokens: int) -> Any:
    """An onnxruntime session of the model's forward on one sequence of ``tokens`` ids (input ``ids``), or None."""
    try:
        import onnx
        import onnxruntime
        from onnx import TensorProto, helper
    except ImportError:
        return None
    g, out = bert_graph(model, tokens) if isinstance(model, BertEncoder) else llama_graph(model, tokens)  # type: ignore[arg-type]
    width = model.tensor(f"{next(iter(model.linears))}.weight").shape[1]
    graph = helper.make_graph(
        g.nodes, "forward", [helper.make_tensor_value_info("ids", TensorProto.INT64, [tokens])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [tokens, width])], g.inits,
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    onnx.checker.check_model(proto)
    return _session(onnxruntime, proto)


def onnx_gemms(model: Transformer, tokens: int) -> tuple[Any, dict[str, np.ndarray]] | None:
    """onnxruntime's MatMuls of the same graph alone (one per linear, pre-packed weights) and their feeds, or None."""
    try:
        import onnxruntime
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    nodes, inits, outputs, widths = [], [], [], set()
    for index, name in enumerate(model.linears):
        weight = model.tensor(name + ".weight")
        widths.add(weight.shape[1])
        inits.append(numpy_helper.from_array(np.ascontiguousarray(weight.T), f"w{index}"))
        nodes.append(helper.make_node("MatMul", [f"x{weight.shape[1]}", f"w{index}"], [f"y{index}"]))
        outputs.append(helper.make_tensor_value_info(f"y{index}", TensorProto.FLOAT, [tokens, weight.shape[0]]))
    inputs = [helper.make_tensor_value_info(f"x{w}", TensorProto.FLOAT, [tokens, w]) for w in sorted(widths)]
    proto = helper.make_model(helper.make_graph(nodes, "gemms", inputs, outputs, inits), opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    rng = np.random.default_rng(2)
    return _session(onnxruntime, proto), {f"x{w}": rng.standard_normal((tokens, w)).astype(np.float32) for w in widths}


def _session(onnxruntime: Any, proto: Any) -> Any:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    return onnxruntime.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])


def forward_products(model: Transformer, batch: Batch) -> list[tuple[tuple[str, ...], np.ndarray]]:
    """The products the fp32 forward makes, in order: each group of linears that read one input, with a copy of it."""
    calls: list[tuple[list[str], np.ndarray]] = []

    def hook(name: str, x: np.ndarray, y: np.ndarray) -> None:
        if calls and calls[-1][1] is x:
            calls[-1][0].append(name)
        else:
            calls.append(([name], x))

    model.hidden(batch, None, hook)
    return [(tuple(names), np.array(x, copy=True)) for names, x in calls]


def gemms_alone(model: Transformer, batch: Batch) -> Callable[[], object]:
    """The forward's linear products (the same prepared weights and calls, bias included) on copies of their inputs."""
    products = [(model.prepared(names), x) for names, x in forward_products(model, batch)]

    def run() -> object:
        return [group.run(x) for group, x in products]

    return run


def gemms_twice(model: Transformer, batch: Batch) -> Callable[[], object]:
    """:func:`gemms_alone` with each product made twice in a row (the second on a weight already in cache)."""
    products = [(model.prepared(names), x) for names, x in forward_products(model, batch)]

    def run() -> object:
        return [(group.run(x), group.run(x)) for group, x in products]

    return run


def blas_alone(model: Transformer, batch: Batch) -> Callable[[], object]:
    """:func:`gemms_alone` and, per block, attention's two batched products on head-major operands of their shapes."""
    gemms = gemms_alone(model, batch)
    cfg: Any = getattr(model, "config")  # noqa: B009  (both architectures' configs carry heads and hidden)
    heads, groups = cfg.heads, getattr(cfg, "kv_heads", cfg.heads)
    dim, tokens = cfg.hidden // heads, len(batch.ids)
    rng = np.random.default_rng(3)
    qs = rng.standard_normal((groups, heads // groups * tokens, dim)).astype(np.float32)
    ks = rng.standard_normal((groups, dim, tokens)).astype(np.float32)
    probs = rng.random((groups, heads // groups * tokens, tokens)).astype(np.float32)
    vs = rng.standard_normal((groups, tokens, dim)).astype(np.float32)

    def run() -> object:
        return gemms(), [(np.matmul(qs, ks), np.matmul(probs, vs)) for _ in range(model.blocks)]

    return run


def cpu_per_wall(run: Callable[[], object], calls: int = 3) -> float:
    """Process CPU time over wall time of a few calls: about 1 for one busy thread (more: extra threads; less: starved)."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        run()
    return (time.process_time() - cpu) / (time.perf_counter() - wall)


def main() -> None:
    """Build every variant, check it against the numpy forward, time them interleaved and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm-l6", choices=["minilm-l6", "smollm2-135m"])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    model = load_model(args.model, lambda message: print(message)).model
    ids = np.random.default_rng(1).integers(1000, 20000, size=args.tokens).astype(np.int64)
    batch = Batch.of([ids.tolist()])
    weights = {name: model.tensor(f"{name}.weight") for name in model.linears}
    fp16 = dense_kernels(weights, dict.fromkeys(weights, "fp16"))
    variants: dict[str, Callable[[], object]] = {
        "numpy fp32": lambda: model.hidden(batch),
        "numpy fp16 emu": lambda: model.hidden(batch, fp16),
        "numpy GEMMs": gemms_alone(model, batch),
        "numpy GEMMs x2": gemms_twice(model, batch),
        "numpy BLAS": blas_alone(model, batch),
    }
    session, gemms = onnx_session(model, args.tokens), onnx_gemms(model, args.tokens)
    with threadpool_limits(1):
        reference = model.hidden(batch)
        scale = float(np.max(np.abs(reference)))
        checks = {"numpy fp16 emu": float(np.max(np.abs(model.hidden(batch, fp16) - reference))) / scale}
        if session is not None and gemms is not None:
            matmuls, feeds = gemms
            variants["onnxruntime"] = lambda: session.run(None, {"ids": ids})
            variants["onnxrt GEMMs"] = lambda: matmuls.run(None, feeds)
            got = session.run(None, {"ids": ids})[0]
            checks["onnxruntime"] = float(np.max(np.abs(got - reference))) / scale
        samples = interleaved(variants, args.rounds, warmup=2)
        blas = ", ".join(
            f"{i['internal_api']} {i['num_threads']} ({i.get('architecture') or 'unknown'} kernels)"
            for i in threadpool_info() if i["user_api"] == "blas"
        )
        if os.environ.get("OPENBLAS_CORETYPE"):  # the kernel family is forced, not OpenBLAS's choice for this CPU
            blas += f", forced by OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} in the environment"
        cpu_share = {name: cpu_per_wall(run) for name, run in variants.items()}
    print(f"{args.model} forward, {args.tokens} tokens, 1 thread, {args.rounds} interleaved rounds")
    print(f"  BLAS threads: {blas}; onnxruntime: 1 intra-op, 1 inter-op thread; "
          f"process CPU / wall per variant: {', '.join(f'{n} {v:.2f}' for n, v in cpu_share.items())}")
    for name, err in checks.items():
        print(f"  {name}: max |output - numpy fp32| = {err:.2e} of the output's max")
    if session is None:
        print("  onnxruntime: not installed (pip install onnx onnxruntime); comparing with the GEMMs alone")
    base = "onnxruntime" if session is not None else "numpy GEMMs"
    print(f"{'variant':<16} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'/ ' + base:>16} {'/ numpy GEMMs':>14}")
    for name, values in samples.items():
        tail = percentiles(values)
        print(f"{name:<16} {tail.p50:8.2f} {tail.p95:8.2f} {tail.p99:8.2f} "
              f"{median(values) / median(samples[base]):15.2f}x {median(values) / median(samples['numpy GEMMs']):13.2f}x")

    def ratio(a: str, b: str) -> float:
        return median(samples[a]) / median(samples[b])

    if session is not None:
        elementwise = median(samples["numpy fp32"]) - median(samples["numpy BLAS"])
        allowed = 1.2 * median(samples["onnxruntime"]) - median(samples["numpy BLAS"])
        print(f"numpy fp32 forward / onnxruntime forward: {ratio('numpy fp32', 'onnxruntime'):.2f}x (target <= 1.2x)")
        print(f"numpy GEMMs alone / onnxruntime forward:  {ratio('numpy GEMMs', 'onnxruntime'):.2f}x; numpy BLAS alone: "
              f"{ratio('numpy BLAS', 'onnxruntime'):.2f}x (floors of the numpy forward; numpy GEMMs / onnxruntime's "
              f"{ratio('numpy GEMMs', 'onnxrt GEMMs'):.2f}x)")
        cached = median(samples["numpy GEMMs x2"]) - median(samples["numpy GEMMs"])
        print(f"numpy GEMMs on weights in cache (x2 - GEMMs): {cached:.1f} ms = "
              f"{cached / median(samples['onnxrt GEMMs']):.2f}x onnxruntime's GEMMs; their first calls (weights from "
              f"memory) took {median(samples['numpy GEMMs']) - cached:+.1f} ms more")
        print(f"numpy elementwise work (fp32 - BLAS): {elementwise:.1f} ms; 1.2x onnxruntime leaves it {allowed:.1f} ms; "
              f"onnxruntime's own non-GEMM work: {median(samples['onnxruntime']) - median(samples['onnxrt GEMMs']):.1f} ms")
    print(f"fp16 emulation / fp32 forward: {ratio('numpy fp16 emu', 'numpy fp32'):.2f}x (target <= 1.3x)")


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
