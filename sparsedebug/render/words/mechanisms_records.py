"""Words for the classification's own facts: an evidence line with its gate, an attributed part, the proof of the
winner, the margin, and the fix a compute, scheduling or thermal recipe proposes (by its code)."""

from __future__ import annotations

from sparsedebug.records.classification import AttributedPart, Classification, Fix, is_dispatch_cause
from sparsedebug.render.words.classify_records import evidence_words, fix_phrase
from sparsedebug.render.words.dispatch import fix_for_group, listed
from sparsedebug.render.words.notes import say

# Parts attributed by a state of the whole run (clocks fell, threads queue): the state's rule evidence is quoted.
_STATE_PARTS = ("mechanisms.part_clocks_fell", "mechanisms.part_threads_queue")


def part_words(part: AttributedPart, cls: Classification) -> str:
    """What supports the mechanism of one attributed part, with the state rule's numbers where it rests on one."""
    text = say(part.evidence)
    if part.evidence.code in _STATE_PARTS:
        line = next((e for e in cls.evidence if e.rule == part.evidence.values.get("rule")), None)
        if line is not None:
            text += f" ({evidence_words(line)})"
    return text


def proof_words(cls: Classification) -> str | None:
    """The artifact that proves the winner and what in it does (None without a proof)."""
    proof = cls.proof
    if proof is None:
        return None
    line = next((e for e in cls.evidence if e.rule == proof.rule), None) if proof.rule is not None else None
    parts = cls.attribution.parts if cls.attribution is not None else []
    part = next((p for p in parts if p.part == proof.part and p.kind == proof.part_kind), None) if proof.part else None
    if part is not None:
        behind = f"; rule {line.rule}: {evidence_words(line)}" if line is not None else ""
        return f"{proof.artifact}: {part.part} ({part.kind}) {part.ms:+.3f} ms: {part_words(part, cls)}{behind}"
    if line is not None:
        return f"{proof.artifact}: {line.source}: {evidence_words(line)}"
    return proof.artifact


def margin_words(cls: Classification) -> str:
    """The margin in words, saying it is a ratio: ``"5.00 times the runner-up's score"``."""
    if cls.ranked_by == "attribution":
        if cls.margin is None:
            return "no other mechanism carries any of the change"
        return f"{cls.margin:.2f} times the runner-up's attributed share"
    if cls.margin is None:
        return "no other mechanism scored"
    return f"{cls.margin:.2f} times the runner-up's score"


# What each fix code proposes, over the fix's layer and value (the compute, scheduling and thermal recipes).
FIX_WORDS: dict[str, str] = {
    "pad_shape": "pad {layer} to an aligned shape so it takes the sparse path, and re-time",
    "cast_layer": "cast {layer} to {value} (the dtype the other sparse layers run in) so the backend accepts it on the sparse "
                  "path, and re-time",
    "check_sparse_kernel": "check the sparse kernel chosen for the shape, or raise tokens per call so 2:4 pays off",
    "restore_neighbour_path": "restore the neighbouring op's previous kernel path{where}: check its input layout, dtype and mask, "
                              "and re-trace",
    "convert_once": "convert weights once at load instead of on every call, and re-time",
    "isolate_run": "pin threads and isolate the run, then re-trace",
    "cuda_graph": "capture the forward in a CUDA graph (or batch calls) so the GPU stops waiting on the host, then re-trace",
    "batch_calls": "batch calls so per-call overhead is paid once per batch, then re-time",
    "lock_clocks": "lock clocks (`nvidia-smi -lgc`) or check the power cap (`nvidia-smi -q -d POWER`), then re-time",
    "pin_cpu_governor": "pin the CPU frequency governor to performance, cool down between runs, then re-time",
    # Dispatch fixes without their targets (the memo's claim terms): the cause, generically.
    "make_contiguous": "make the {roles}{where} contiguous (call .contiguous() on their producers' outputs) and re-trace",
    "cast_back": "cast the {roles}{where} back to {restore} and re-trace",
    "drop_attn_mask": "drop the attn_mask{where} (use is_causal=True for a causal mask) and re-trace",
    "drop_dropout": "set dropout_p=0{where} at inference and re-trace",
    "restore_head_dim": "restore the head dimension{where} (a multiple of 8, at most 256, keeps the fused kernels) and re-trace",
}


def _code_words(code: str, layer: str | None, value: object, metric: str, tensors: list[str] | None = None,
                restore: str | None = None) -> str | None:
    """A fix's words from its code, layer, value and the metric it should move (None: the code has no words here)."""
    if code == "exclude_layer":
        if metric == "fallback_flop_share":
            return f"exclude {layer} from sparsity (it falls back to dense) and check latency does not move"
        return f"exclude {layer} from sparsity: its sparse kernel is slower than dense"
    if code == "set_threads":
        if metric == "latency_p50_ms":
            return f"set threads to {value} (the logical core count) and re-time"
        return f"set threads to {value} and re-time; if the gap stays, batch calls"
    template = FIX_WORDS.get(code)
    if template is None:
        return None
    where = f" ({layer})" if code == "restore_neighbour_path" and layer else (f" of {layer}" if layer else "")
    roles = listed(tensors) if tensors else "inputs"
    return template.format(layer=layer, value=value, where=where, roles=roles, restore=restore or "their baseline dtype")


def fix_words(fix: Fix) -> str:
    """What the fix proposes, in words: the dispatch causes it undoes on its targets, else its code's words."""
    if fix.targets and fix.kind == "advice":
        return "; ".join(fix_for_group(t.cause, t.layers, t.tensors, t.restore) for t in fix.targets
                         if is_dispatch_cause(t.cause))
    layer, members = fix.layer, [name for t in fix.targets for name in t.layers]
    if fix.kind == "layer" and members:  # a layer fix on every layer sharing the fallback reason: it names the set
        layer = f"all {len(members)} layers that fall back for {listed(sorted({str(t.cause) for t in fix.targets}))} ({listed(members)})"
    named = _code_words(fix.code, layer, fix.value, fix.metric) if fix.code is not None else None
    text = named or fix_phrase(fix.code, fix.rule, value=fix.value, layer=layer, was=fix.was, names_layer=fix.names_layer,
                               layer_role=fix.layer_role)
    if fix.kind == "knob" and members:  # a workload knob: it covers them all, and names them
        text += f" (it covers all {len(members)} layers that {'convert on every call' if fix.knob == 'conversion' else 'share the cause'}: {listed(members)})"
    return text


def advice_words(terms: dict[str, str], layer: str | None) -> str:
    """The words of an advice fix from a memo claim's terms (its action code, value, metric, the first target's tensors
    and the dtype it restores), on ``layer`` as the memo styles it."""
    tensors = [t for t in terms.get("tensors", "").split(",") if t]
    named = _code_words(terms.get("action_code", ""), layer, terms.get("value"), terms.get("metric", ""), tensors,
                        terms.get("restore") or None)
    return named or fix_phrase(terms.get("action_code") or None, terms.get("rule", ""), value=terms.get("value"), layer=layer,
                               was=terms.get("was"), names_layer=terms.get("names_layer"), layer_role=terms.get("layer_role"))
