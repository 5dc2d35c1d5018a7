"""The claims check: every number in a rendered memo traced to a figure of the memo model, and wording its facts carry.

It reads the final text (memo.md, the terminal summary, a step summary) independently of the renderer that
wrote it: numbers are found by their shape in the text, not by asking the renderer, and matched to the memo
model's figures at the precision printed. It reports:

- a number with no figure of that value at that precision (a renderer printing another figure, a computed
  or stale number);
- one quantity (quantity, role, clock) holding two values in the model;
- wording the facts do not support: "explains" without the first stage's layers carrying
  ``EXPLAINS_MIN_SHARE`` of the change, "carries" with a share that is not positive, a rule score quoted where
  the ranking is by attributed share, a direction word that contradicts the measured movement, stock phrases
  about the host when no figure shows host time.

Names and codes are in code spans (Markdown) or are identifiers (``layer.3``, ``fp16``, ``2:4``, ``p50``), never figures.
"""

from __future__ import annotations

import re

from sparsedebug.records.memo import EXPLAINS_MIN_SHARE, Figure, Memo

CODE_SPAN = re.compile(r"`[^`]*`")
LINK_TARGET = re.compile(r"\]\([^)]*\)")
HEADING_NUMBER = re.compile(r"^(#+\s*)\d+\.\s", re.MULTILINE)
LIST_NUMBER = re.compile(r"^(\s*)\d+\.\s", re.MULTILINE)
STEP_NUMBER = re.compile(r"^()\d (?=(freeze|locate|classify|reproduce|rerun)\b)", re.MULTILINE)
"""The terminal summary's step numbers."""
# A standalone number: not part of an identifier, a version, a pattern (2:4), a path or a file name.
NUMBER = re.compile(
    r"(?<![\w.:/@#-])(?P<sign>[-+])?(?P<num>\d+(?:\.\d+)?(?:e[-+]?\d+)?)(?P<unit>\s?ms|x|%)?(?![\w.:/]*\w)"
)

# Phrases that state a fact: each needs a positive figure of that quantity in the model.
STOCK_PHRASES: dict[str, str] = {
    "waiting on the host": "host_wait_ms",
    "waits on the host": "host_wait_ms",
}


def _printed_values(f: Figure) -> list[float]:
    """The values a figure may be printed as: itself, and as a percentage for a share."""
    return [100 * f.value] if f.unit == "share" else [f.value]


def _matches(text: str, f: Figure, signed: bool, unit: str) -> bool:
    if unit == "%" and f.unit != "share":
        return False
    if unit in ("ms",) and f.unit != "ms":
        return False
    if unit == "x" and f.unit not in ("x", "ratio"):  # a ratio may be printed as a multiple (p99 ratio 1.100x)
        return False
    decimals = len(text.split("e")[0].split(".")[1]) if "." in text.split("e")[0] else 0
    quoted = float(text)
    for value in _printed_values(f):
        candidates = [value] if signed else [value, abs(value)]
        for v in candidates:
            if "e" in text:
                if abs(v - quoted) <= abs(quoted) * 0.06:
                    return True
            elif abs(round(v, decimals) - quoted) <= 0.5 * 10 ** -decimals + 1e-9:
                return True
    return False


def numbers(text: str) -> list[tuple[str, str, bool, str]]:
    """Every standalone number of ``text``: (line, number as printed, signed, unit), names and list numbers left out."""
    clean = CODE_SPAN.sub("``", text)
    clean = LINK_TARGET.sub("]()", clean)
    clean = HEADING_NUMBER.sub(r"\1", clean)
    clean = LIST_NUMBER.sub(r"\1", clean)
    clean = STEP_NUMBER.sub("", clean)
    out = []
    for line in clean.splitlines():
        for m in NUMBER.finditer(line):
            unit = (m.group("unit") or "").strip()
            signed = m.group("sign") is not None
            value = ("-" if m.group("sign") == "-" else "") + m.group("num")
            out.append((line, value, signed, unit))
    return out


def model_problems(memo: Memo) -> list[str]:
    """One quantity, one value: figures of the same (quantity, role, clock) that differ."""
    seen: dict[tuple[str, str | None, str | None], float] = {}
    problems = []
    for f in memo.figures():
        prior = seen.setdefault(f.key, f.value)
        if abs(prior - f.value) > 1e-9 * max(1.0, abs(prior)):
            problems.append(f"two values for {f.quantity} ({f.role}, {f.clock}): {prior:g} and {f.value:g}")
    return problems


def text_problems(text: str, memo: Memo) -> list[str]:
    """Numbers in ``text`` with no figure of the model behind them, and wording the model's facts do not carry."""
    figures = memo.figures()
    problems = []
    for line, value, signed, unit in numbers(text):
        if not any(_matches(value, f, signed, unit) for f in figures):
            problems.append(f"no figure behind {value}{unit}: {line.strip()[:160]}")
    low = text.lower()
    first = memo.symptom.first_stage if memo.symptom is not None else None
    share = first.figure("accounted_share") if first is not None else None
    if "explains" in low and (share is None or share.value < EXPLAINS_MIN_SHARE):
        problems.append("says a stage explains the downstream change, but its layers carry less than "
                        f"{EXPLAINS_MIN_SHARE:.0%} of it")
    for line in text.splitlines():
        for m in re.finditer(r"carries ([-+]?\d+(?:\.\d+)?) ms", line):
            if float(m.group(1)) <= 0:
                problems.append(f"'carries' with a share that is not positive: {line.strip()[:160]}")
    primary = memo.hypothesis.primary if memo.hypothesis is not None else None
    if primary is not None and primary.terms.get("ranked_by") == "attribution" and re.search(r"\bscores?\b", low):
        problems.append("quotes a rule score where the mechanisms are ranked by attributed share")
    measured = memo.action.measured if memo.action is not None else None
    if measured is not None:
        direction = measured.terms.get("direction")
        wrong = {"faster": "slower", "slower": "faster"}.get(direction or "")
        for line in text.splitlines():
            if ("measured movement" in line.lower() or line.startswith("5 rerun")) and wrong and re.search(rf"\b{wrong}\b", line):
                problems.append(f"says the re-run was {wrong} but it measured {direction}: {line.strip()[:160]}")
    for phrase, quantity in STOCK_PHRASES.items():
        if phrase in low and not any(f.quantity == quantity and f.value > 0 for f in figures):
            problems.append(f"says {phrase!r} but no figure shows {quantity} above zero")
    return problems


def check_claims(text: str, memo: Memo) -> list[str]:
    """Every problem of ``text`` rendered from ``memo`` (empty: every number and claim is carried by the model)."""
    return model_problems(memo) + text_problems(text, memo)


MAX_LINE = 200
"""The longest line a memo may print (a lead reads it without scrolling)."""
MAX_TABLE_ROW = 300
"""The longest row of the results table."""
MAX_SENTENCE_WORDS = 40
"""The most words one sentence of the memo may hold."""

# A code a lead cannot decode: a dotted rule id (scheduling.overhead_regression), or a snake_case field or status.
RULE_CODE = re.compile(r"\b(?:compute|memory|scheduling|precision|thermal|gate|locate|signoff)\.[a-z_]+\b")
SNAKE = re.compile(r"(?<![\w./-])[a-z]+(?:_[a-z0-9]+)+(?![\w./-])")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[*])")


def _words_of(line: str) -> str:
    """A line's words with names (code spans) and link targets taken out."""
    return LINK_TARGET.sub("]", CODE_SPAN.sub("name", line))


def lead_problems(text: str) -> list[str]:
    """Where a memo breaks the limits a lead reads it by: a line over ``MAX_LINE`` characters (a table row over
    ``MAX_TABLE_ROW``), a sentence over ``MAX_SENTENCE_WORDS`` words, a rule code anywhere (names included), a
    snake_case field or status outside a name (a code span)."""
    problems = []
    for line in text.splitlines():
        row = line.startswith("|")
        limit = MAX_TABLE_ROW if row else MAX_LINE
        if len(line) > limit:
            problems.append(f"line of {len(line)} characters (limit {limit}): {line}")
        words = _words_of(line)
        for code in (*RULE_CODE.findall(LINK_TARGET.sub("]", line)), *SNAKE.findall(words)):
            problems.append(f"code {code!r} a lead cannot decode: {line[:80]}...")
        if row or line.startswith("#"):
            continue
        for sentence in SENTENCE_END.split(words):
            n = len(sentence.split())
            if n > MAX_SENTENCE_WORDS:
                problems.append(f"sentence of {n} words (limit {MAX_SENTENCE_WORDS}): {sentence[:80]}...")
    return problems
