"""`sparsedebug reduce`: step 4, the smallest change and graph that still reproduce a divergence."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sparsedebug.cli.common import EXIT_CHECK_FAILED, JsonOption, WideOption, console, emit_json, err_console, handle_errors
from sparsedebug.core.errors import UserError
from sparsedebug.records.defaults import DEFAULT_ALPHA, DEFAULT_MAX_PROBES, DEFAULT_MIN_EFFECT, DEFAULT_PROBE_REPEATS, MAX_REPEATS

WorkloadArg = Annotated[Path, typer.Argument(help="A workload YAML.", show_default=False)]


@handle_errors
def reduce(
    good: WorkloadArg,
    bad: WorkloadArg,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Where to write the reproducer (its baseline goes beside it as <stem>.base.yaml); atomic.")
    ] = Path("repro.yaml"),
    probe_repeats: Annotated[
        int, typer.Option(help="Timed repetitions per probe replay (doubled once when a probe is undecided; 3 to 10,000).", min=3, max=MAX_REPEATS)
    ] = DEFAULT_PROBE_REPEATS,
    max_probes: Annotated[int, typer.Option(help="Stop searching after this many probes, keeping the best so far (1 to 10,000).", min=1, max=MAX_REPEATS)] = DEFAULT_MAX_PROBES,
    alpha: Annotated[float, typer.Option(help="Significance level of the rank tests.", min=1e-6, max=0.5)] = DEFAULT_ALPHA,
    min_effect: Annotated[float, typer.Option(help="Minimum median ratio that counts as a change (1 to 100).", min=1.0, max=100.0)] = DEFAULT_MIN_EFFECT,
    probes: Annotated[bool, typer.Option("--probes/--no-probes", help="Show the probe log.")] = True,
    wide: WideOption = False,
    json_out: JsonOption = False,
) -> None:
    """Reduce GOOD -> BAD to one focused reproducer of its first divergence.

    Bisects the pair to learn the target (graph and lowering divergences are
    decided statically, from the backend profile's decisions, without timing;
    kernel, schedule and outcome need timed replays). Then runs delta debugging
    (ddmin) over the differences between the workloads, every knob and every
    changed, added or removed layer, keeping the smallest subset that still
    reproduces the target; reduces independent causes of other kinds too. Then
    shrinks the graph (blocks, layers, tokens, widths) while it still reproduces,
    confirms with a timed replay, and writes the reproducer and its baseline.

    Prints the kept changes, every probe, the counts and the one command that
    reproduces it. Exit 0 when reduced and confirmed, 1 when the regression
    cannot be reproduced (or the confirmation disagrees), 2 on bad input.
    """
    from sparsedebug.core.io import check_output
    from sparsedebug.core.signals import signals_deferred
    from sparsedebug.reduce.reduce import reduce_workloads
    from sparsedebug.render.terminal.bisect import reduce_view
    from sparsedebug.render.words.notes import say
    from sparsedebug.sources.detect import load_workload
    from sparsedebug.sources.workload.schema import save_workload

    if good.resolve() == bad.resolve():
        raise UserError(f"{bad}: GOOD and BAD are the same file")
    if output.suffix.lower() not in (".yaml", ".yml"):
        raise UserError(f"{output}: the reproducer is a workload; use a .yaml or .yml name")
    check_output(output, "-o")
    good_workload = load_workload(good)
    bad_workload = load_workload(bad)
    err = err_console()
    reduction = reduce_workloads(
        good_workload,
        bad_workload,
        probe_repeats=probe_repeats,
        max_probes=max_probes,
        progress=lambda event: err.print(say(event), highlight=False, markup=False),
        good_dir=good.parent,
        bad_dir=bad.parent,
        repro_path=output,
        alpha=alpha,
        min_effect=min_effect,
    )
    result = reduction.record
    confirmed = result.reproduced and result.confirmed
    if reduction.repro is not None and reduction.base is not None:
        with signals_deferred():  # both files or neither
            save_workload(reduction.base, output.with_name(f"{output.stem}.base{output.suffix}"))
            save_workload(reduction.repro, output)
    if json_out:
        emit_json(result)
    else:
        out = console(wide)
        out.print(reduce_view(result, show_probes=probes))
        if reduction.repro is not None:
            out.print(f"wrote {output} and {output.with_name(f'{output.stem}.base{output.suffix}')}")
    if not confirmed:
        raise typer.Exit(EXIT_CHECK_FAILED)


def register(app: typer.Typer) -> None:
    """Add `reduce` to the app."""
    app.command("reduce")(reduce)
