"""Wall time of `sparsedebug quality` against its target, and against a dense forward pass in the same process.

The target (issue 15): `quality smollm2-135m` with magnitude, Wanda and
SparseGPT at 2:4 on 2,048 evaluation tokens in under 10 minutes on 2 cores.
This script runs exactly that study through the library (default sizes:
2,048 evaluation and 2,048 calibration tokens), prints each row's time and the
total, and times dense forward passes over the evaluation tokens before and
after the study (median of ``--rounds``), so the study's cost is also given in
dense passes: a figure that travels between machines better than seconds. The
machine's load average is printed too: on a shared machine the seconds move
with it, the ratio much less. Usage::

    python benchmarks/quality_study.py [--model smollm2-135m] [--tokens 2048] [--calibration-tokens 2048] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from sparsedebug.core.stats import median
from sparsedebug.kernels.bench import blas_description
from sparsedebug.kernels.masks import parse_pattern
from sparsedebug.quality.study import StudyRequest, run_study
from sparsedebug.sources.models.data import prepare_data
from sparsedebug.sources.models.load import load_model
from sparsedebug.sources.models.text import default_corpus

TARGET_S = 600.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--calibration-tokens", type=int, default=2048)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    threads, blas = blas_description()
    print(f"{os.cpu_count()} CPUs, BLAS {blas} with {threads} thread(s); load average {os.getloadavg()[0]:.2f}")
    start = time.perf_counter()
    loaded = load_model(args.model, lambda message: print(message, file=sys.stderr))
    load_s = time.perf_counter() - start
    corpus = default_corpus()
    data = prepare_data(loaded, corpus, args.tokens, args.calibration_tokens)

    def dense_pass() -> float:
        begin = time.perf_counter()
        loaded.model.hidden(data.evaluation)
        return time.perf_counter() - begin

    before = [dense_pass() for _ in range(args.rounds)]
    request = StudyRequest(
        methods=["magnitude", "wanda", "sparsegpt"],
        patterns=[parse_pattern("2:4")],
        eval_tokens=args.tokens,
        calibration_tokens=args.calibration_tokens,
    )
    begin = time.perf_counter()
    study = run_study(loaded, corpus, request)
    study_s = time.perf_counter() - begin
    after = [dense_pass() for _ in range(args.rounds)]
    dense_s = median(before + after)
    print(f"model load {load_s:.1f} s; dense forward over {data.split.evaluation_tokens} tokens: median {dense_s:.2f} s "
          f"(before {median(before):.2f}, after {median(after):.2f})")  # fmt: skip
    print(f"{'row':<22} {'metric':>10} {'seconds':>8} {'calibration s':>14} {'dense passes':>13}")
    for row in study.rows:
        value = row.metrics.perplexity if study.metric == "perplexity" else row.metrics.cosine_mean
        print(f"{row.label:<22} {value:>10.3f} {row.seconds:>8.1f} {row.calibration_seconds:>14.1f} {row.seconds / dense_s:>13.1f}")
    total = load_s + study_s
    verdict = "within" if total < TARGET_S else "OVER"
    print(f"study {study_s:.1f} s + load {load_s:.1f} s = {total:.1f} s: {verdict} the {TARGET_S:.0f} s target "
          f"({study_s / dense_s:.1f} dense passes); load average now {os.getloadavg()[0]:.2f}")  # fmt: skip


if __name__ == "__main__":
    from results import record  # benchmarks/results.py: the figures go to docs/benchmarks/results.md

    record(main)
