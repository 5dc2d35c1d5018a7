"""The MiniLM forward (numpy, 1 thread) against its GEMMs alone and onnxruntime on the same graph.

Loads all-MiniLM-L6-v2 (``sparsedebug.sources.models``; fetched on first use), runs one
sentence of TOKENS token ids through the encoder, and times, interleaved in one process
(``core.timing.interleaved``, medians, p50/p95/p99), with one BLAS thread (threadpoolctl):

``numpy fp32``       ``BertEncoder.hidden``: the forward the quality study runs
``numpy fp16 emu``   the same forward on the replay's kernels at fp16 (operands rounded to fp16,
                     fp32 accumulation): the forward the playbook walk replays
``GEMMs alone``      the 36 linear products of that forward (x @ W.T, pre-made inputs): the floor
``onnxruntime``      the same graph built from the same weights as ONNX (Gather, LayerNormalization,
                     MatMul, Softmax, Erf GELU), fp32, one intra-op thread, all graph optimisations;
                     only where ``onnx`` and ``onnxruntime`` are installed (benchmark-only extras:
                     ``pip install onnx onnxruntime``)

Every variant's output is first checked against the numpy fp32 forward. Ratios are variant
median / reference median. Usage: python benchmarks/forward.py [--tokens 128] [--rounds 15]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from sparsedebug.core.stats import median, percentiles
from sparsedebug.core.timing import interleaved
from sparsedebug.sources.models.base import Batch
from sparsedebug.sources.models.bert import BertEncoder
from sparsedebug.sources.models.load import load_model
from sparsedebug.sources.replay.checkpoint.kernels import dense_kernels


def onnx_session(model: BertEncoder, tokens: int) -> Any:
    """An onnxruntime session of the encoder on one sequence of ``tokens`` ids (input ``ids``), or None."""
    try:
        import onnx
        import onnxruntime
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    cfg = model.config
    heads, dim = cfg.heads, cfg.hidden // cfg.heads
    nodes: list[Any] = []
    inits: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def norm(x: str, prefix: str) -> str:
        w = const(prefix + ".w", model.tensor(prefix + ".weight"))
        b = const(prefix + ".b", model.tensor(prefix + ".bias"))
        return node("LayerNormalization", [x, w, b], prefix + ".out", axis=-1, epsilon=cfg.eps)

    def linear(x: str, name: str) -> str:
        w = const(name + ".wt", model.tensor(name + ".weight").T)
        y = node("MatMul", [x, w], name + ".mm")
        return node("Add", [y, const(name + ".b", model.tensor(name + ".bias"))], name + ".out")

    words = const("words", model.tensor("embeddings.word_embeddings.weight"))
    positions = const("positions", model.tensor("embeddings.position_embeddings.weight")[:tokens])
    segment = const("segment", model.tensor("embeddings.token_type_embeddings.weight")[0])
    x = node("Gather", [words, "ids"], "embedded", axis=0)
    x = node("Add", [x, positions], "with_positions")
    x = node("Add", [x, segment], "with_segment")
    h = norm(x, "embeddings.LayerNorm")
    split = const("split_shape", np.array([tokens, heads, dim], dtype=np.int64))
    merged = const("merged_shape", np.array([tokens, heads * dim], dtype=np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(dim), dtype=np.float32))
    root2 = const("root2", np.array(np.sqrt(2.0), dtype=np.float32))
    one = const("one", np.array(1.0, dtype=np.float32))
    half = const("half", np.array(0.5, dtype=np.float32))
    for b in range(cfg.blocks):
        p = f"encoder.layer.{b}."
        q, k, v = (node("Reshape", [linear(h, p + f"attention.self.{n}"), split], p + n + ".split")
                   for n in ("query", "key", "value"))
        qh = node("Transpose", [q], p + "qh", perm=[1, 0, 2])
        kh = node("Transpose", [k], p + "kh", perm=[1, 2, 0])
        vh = node("Transpose", [v], p + "vh", perm=[1, 0, 2])
        scores = node("Mul", [node("MatMul", [qh, kh], p + "scores"), scale], p + "scaled")
        probs = node("Softmax", [scores], p + "probs", axis=-1)
        context = node("Transpose", [node("MatMul", [probs, vh], p + "ctx")], p + "ctx_t", perm=[1, 0, 2])
        context = node("Reshape", [context, merged], p + "ctx_merged")
        x = node("Add", [linear(context, p + "attention.output.dense"), h], p + "attn_res")
        x = norm(x, p + "attention.output.LayerNorm")
        inner = linear(x, p + "intermediate.dense")
        erf = node("Erf", [node("Div", [inner, root2], p + "div")], p + "erf")
        gelu = node("Mul", [node("Mul", [inner, node("Add", [erf, one], p + "erf1")], p + "g1"), half], p + "gelu")
        y = node("Add", [linear(gelu, p + "output.dense"), x], p + "ffn_res")
        h = norm(y, p + "output.LayerNorm")
    graph = helper.make_graph(
        nodes, "minilm", [helper.make_tensor_value_info("ids", TensorProto.INT64, [tokens])],
        [helper.make_tensor_value_info(h, TensorProto.FLOAT, [tokens, cfg.hidden])], inits,
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    onnx.checker.check_model(proto)
    return _session(onnxruntime, proto)


def forward_products(model: BertEncoder, batch: Batch) -> list[tuple[tuple[str, ...], np.ndarray]]:
    """The products the fp32 forward makes, in order: each group of linears that read one input, with a copy of it."""
    calls: list[tuple[list[str], np.ndarray]] = []

    def hook(name: str, x: np.ndarray, y: np.ndarray) -> None:
        if calls and calls[-1][1] is x:
            calls[-1][0].append(name)
        else:
            calls.append(([name], x))

    model.hidden(batch, None, hook)
    return [(tuple(names), np.array(x, copy=True)) for names, x in calls]


def gemms_alone(model: BertEncoder, batch: Batch) -> Callable[[], object]:
    """The forward's linear products (the same prepared weights and calls, bias included) on copies of their inputs."""
    products = [(model.prepared(names), x) for names, x in forward_products(model, batch)]

    def run() -> object:
        return [group.run(x) for group, x in products]

    return run


def onnx_gemms(model: BertEncoder, tokens: int) -> Any:
    """onnxruntime's MatMuls of the same graph alone (one per linear, pre-packed weights), inputs ``x`` and ``u``."""
    try:
        import onnxruntime
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    cfg = model.config
    nodes, inits, outputs = [], [], []
    for index, name in enumerate(model.linears):
        weight = model.tensor(name + ".weight")
        inits.append(numpy_helper.from_array(np.ascontiguousarray(weight.T), f"w{index}"))
        nodes.append(helper.make_node("MatMul", ["x" if weight.shape[1] == cfg.hidden else "u", f"w{index}"], [f"y{index}"]))
        outputs.append(helper.make_tensor_value_info(f"y{index}", TensorProto.FLOAT, [tokens, weight.shape[0]]))
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [tokens, w]) for n, w in (("x", cfg.hidden), ("u", cfg.ffn))]
    proto = helper.make_model(helper.make_graph(nodes, "gemms", inputs, outputs, inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    return _session(onnxruntime, proto)


def _session(onnxruntime: Any, proto: Any) -> Any:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    return onnxruntime.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])


def main() -> None:
    """Build every variant, check it against the numpy forward, time them interleaved and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    loaded = load_model("minilm-l6", lambda message: print(message))
    model = loaded.model
    assert isinstance(model, BertEncoder)
    ids = np.random.default_rng(1).integers(1000, 20000, size=args.tokens).astype(np.int64)
    batch = Batch.of([ids.tolist()])
    weights = {name: model.tensor(f"{name}.weight") for name in model.linears}
    fp16 = dense_kernels(weights, dict.fromkeys(weights, "fp16"))
    variants: dict[str, Callable[[], object]] = {
        "numpy fp32": lambda: model.hidden(batch),
        "numpy fp16 emu": lambda: model.hidden(batch, fp16),
        "numpy GEMMs": gemms_alone(model, batch),
    }
    session, gemms = onnx_session(model, args.tokens), onnx_gemms(model, args.tokens)
    with threadpool_limits(1):
        reference = model.hidden(batch)
        scale = float(np.max(np.abs(reference)))
        checks = {"numpy fp16 emu": float(np.max(np.abs(model.hidden(batch, fp16) - reference))) / scale}
        if session is not None and gemms is not None:
            rng = np.random.default_rng(2)
            feeds = {n: rng.standard_normal((args.tokens, w)).astype(np.float32)
                     for n, w in (("x", model.config.hidden), ("u", model.config.ffn))}
            variants["onnxruntime"] = lambda: session.run(None, {"ids": ids})
            variants["onnxrt GEMMs"] = lambda: gemms.run(None, feeds)
            got = session.run(None, {"ids": ids})[0]
            checks["onnxruntime"] = float(np.max(np.abs(got - reference))) / scale
        samples = interleaved(variants, args.rounds, warmup=2)
    print(f"MiniLM-L6 forward, {args.tokens} tokens, 1 thread, {args.rounds} interleaved rounds")
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
        print(f"numpy fp32 forward / onnxruntime forward: {ratio('numpy fp32', 'onnxruntime'):.2f}x (target <= 1.2x)")
        print(f"numpy GEMMs alone / onnxruntime forward:  {ratio('numpy GEMMs', 'onnxruntime'):.2f}x "
              f"(the floor of the numpy forward; GEMMs alone / onnxruntime's: {ratio('numpy GEMMs', 'onnxrt GEMMs'):.2f}x)")
    print(f"fp16 emulation / fp32 forward: {ratio('numpy fp16 emu', 'numpy fp32'):.2f}x (target <= 1.3x)")


if __name__ == "__main__":
    main()
