"""The timeline strip: the median-span iteration, gaps classed as the importer's timeline, cuts, H200 traces."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from sparsedebug.records.run import KernelClass
from sparsedebug.sources.importers.trace.analysis.strip import idle_gaps, iteration_strip
from sparsedebug.sources.importers.trace.importer import GpuOp, analyze_trace, timeline
from tests.conftest import FIXTURES

H200 = FIXTURES / "h200"


def op(ts: float, dur: float, launch: float | None, cls: KernelClass = KernelClass.ELEMENTWISE, layer: str = "l") -> GpuOp:
    return GpuOp(name="k", ts=ts, dur=dur, device=0, stream=7, correlation=None, is_kernel=True, cls=cls, launch_ts=launch, layer=layer)


def test_hand_made_iteration_gaps_and_times() -> None:
    # op A 100..110; B launched at 115 (after A ended): host wait 110..120; C queued at 90: kernel wait 125..130;
    # D overlaps C; E has no launch: other 140..150.
    ops = [
        op(100, 10, 50, KernelClass.DENSE_TC_GEMM, "a"),
        op(120, 5, 115, KernelClass.SPARSE_GEMM, "b"),
        op(130, 8, 90),
        op(132, 8, 91),
        op(150, 2, None),
    ]
    assert idle_gaps(ops) == [(110, 10, "host_wait"), (125, 5, "kernel_wait"), (140, 10, "other")]
    strip = iteration_strip([ops])
    assert strip is not None
    assert strip.iteration == 0 and strip.events_total == 5 and strip.cut_at_ms is None
    assert strip.span_ms == 0.052
    assert [(e.start_ms, e.dur_ms, e.kernel_class, e.stream, e.layer) for e in strip.events[:2]] == [
        (0.0, 0.01, KernelClass.DENSE_TC_GEMM, 7, "a"), (0.02, 0.005, KernelClass.SPARSE_GEMM, 7, "b"),
    ]
    assert [(g.start_ms, g.dur_ms, g.cause) for g in strip.gaps] == [(0.01, 0.01, "host_wait"), (0.025, 0.005, "kernel_wait"), (0.04, 0.01, "other")]


def test_the_median_span_iteration_stands_for_the_run() -> None:
    warmup = [op(0, 10, 0), op(100, 10, 95)]  # span 110 us
    short = [op(1000, 10, 990), op(1012, 10, 1000)]  # span 22
    middle = [op(2000, 10, 1990), op(2030, 10, 2025)]  # span 40
    strip = iteration_strip([warmup, [], short, middle])
    assert strip is not None and strip.iteration == 3 and strip.span_ms == 0.04
    # even count: the lower median; equal spans keep their order
    strip = iteration_strip([middle, short])
    assert strip is not None and strip.iteration == 1
    strip = iteration_strip([middle, short, list(short)])
    assert strip is not None and strip.iteration == 2
    assert iteration_strip([[], []]) is None


def test_a_long_iteration_is_cut_and_says_where() -> None:
    ops = [op(10.0 * i, 5, 10.0 * i + 6) for i in range(50)]  # every gap a host wait
    strip = iteration_strip([ops], max_events=20)
    assert strip is not None
    assert len(strip.events) == 20 and strip.events_total == 50
    assert strip.cut_at_ms == 0.2
    assert len(strip.gaps) == 20 and all(g.start_ms + g.dur_ms <= 0.2 + 1e-12 for g in strip.gaps)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2000), st.integers(1, 80), st.one_of(st.none(), st.integers(-100, 2100))), min_size=1, max_size=40
    )
)
def test_gaps_add_up_to_the_importer_idle_split(raw: list[tuple[int, int, int | None]]) -> None:
    ops = [op(float(ts), float(dur), None if launch is None else float(launch)) for ts, dur, launch in raw]
    tl = timeline(ops)
    by_cause: dict[str, float] = defaultdict(float)
    for _start, dur, cause in idle_gaps(ops):
        by_cause[cause] += dur / 1e3
    assert abs(by_cause["host_wait"] - tl.host_wait_ms) < 1e-9
    assert abs(by_cause["kernel_wait"] - tl.kernel_wait_ms) < 1e-9
    assert abs(by_cause["other"] - tl.other_wait_ms) < 1e-9


def test_h200_eager_sparse_waits_on_the_host_and_the_cuda_graph_does_not() -> None:
    eager = analyze_trace(H200 / "trace_sparse_mlp_T2048.json.gz")
    strip = eager.record.schedule.timeline
    assert strip is not None
    it = next(i for i in eager.summary.iterations if i.index == strip.iteration)
    assert strip.events_total == it.gpu_ops == len(strip.events)
    assert abs(strip.span_ms - it.span_ms) < 1e-9
    host = sum(g.dur_ms for g in strip.gaps if g.cause == "host_wait")
    busy_union = strip.span_ms - sum(g.dur_ms for g in strip.gaps)
    assert abs(busy_union - it.busy_ms) < 1e-6
    assert host > 0.5 * strip.span_ms  # the eager sparse forward idles more than half of its span waiting on the host
    assert {e.kernel_class for e in strip.events} >= {KernelClass.SPARSE_GEMM, KernelClass.DENSE_TC_GEMM}
    graph = analyze_trace(H200 / "trace_sparse_mlp_T2048_cudagraph.json.gz").record.schedule.timeline
    assert graph is not None
    assert sum(g.dur_ms for g in graph.gaps if g.cause == "host_wait") < 0.01 * graph.span_ms
