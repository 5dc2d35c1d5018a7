"""Nsight Systems and rocprofv3 imports: busy, span and kernel counts against the test's own union, over generated variations."""

from __future__ import annotations

import csv
import gzip
import json
import re
import sqlite3
from pathlib import Path

import pytest

from sparsedebug.core.errors import UserError
from sparsedebug.core.kernel_names import classify_kernel
from sparsedebug.core.kernel_names_rocm import sparse_inferred_from_name
from sparsedebug.records.run import KernelClass
from sparsedebug.sources.detect import detect_kind
from sparsedebug.sources.importers.profiles import ProfileImport, analyze_nsys, analyze_rocprof
from tests.conftest import FIXTURES
from tests.support.profilegen import (
    ROCM_DENSE,
    ROCM_SPARSE,
    ProfileSpec,
    Simulation,
    union_ns,
    write_kernel_trace_csv,
    write_nsys,
    write_rocpd,
    write_rocprof_json,
)

NSYS_SAMPLE = FIXTURES / "nsys" / "pipit_saxpy-mpi-cuda_nsys_perlmutter0.trimmed.sqlite"
ROCPROF_SAMPLE = FIXTURES / "rocprof" / "tracelens_908_results.first3000.json.gz"


def _assert_matches(profile: ProfileImport, truth: dict[int, list[tuple[int, int]]], kernels: dict[int, int]) -> None:
    """Every device's busy (union), span and kernel count equal the ones computed here from the written intervals."""
    assert {d.device for d in profile.devices} == set(truth)
    for share in profile.devices:
        intervals = truth[share.device]
        assert share.busy_ms == pytest.approx(union_ns(intervals) / 1e6, abs=1e-9)
        assert share.span_ms == pytest.approx((max(e for _, e in intervals) - min(s for s, _ in intervals)) / 1e6, abs=1e-9)
        assert share.kernels == kernels[share.device] and share.gpu_ops == len(intervals)
    summary = profile.imported.summary
    mine = truth[profile.device]
    assert summary.busy_ms == pytest.approx(union_ns(mine) / 1e6, abs=1e-9) and summary.kernels == kernels[profile.device]


def _kernels(sim: Simulation) -> dict[int, int]:
    out: dict[int, int] = {}
    for op in sim.ops:
        out[op.device] = out.get(op.device, 0) + (op.kind == "kernel")
    return out


# --------------------------------------------------------------------------- the real samples


def test_nsys_sample_matches_a_plain_union_from_its_own_tables() -> None:
    with sqlite3.connect(f"file:{NSYS_SAMPLE}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY "
                          "UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET").fetchall()
        kernels = db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    profile = analyze_nsys(NSYS_SAMPLE)
    _assert_matches(profile, {0: rows}, {0: kernels})
    assert (len(rows), kernels) == (20, 5)
    record = profile.imported.record
    assert record.source.kind == "nsys" and record.device is not None and record.device.name == "NVIDIA A100-SXM4-40GB"
    assert record.device.compute_capability == "8.0" and record.device.multiprocessors == 108
    assert "saxpy" in {layer.name for layer in record.lower.layers}  # the NVTX push/pop range around each launch
    assert profile.imported.summary.host_wait_ms > 0  # launches linked by correlationId
    assert record.source.window is not None and record.source.window.start_utc_s == pytest.approx(1687813257.6 + 0.887, abs=0.1)
    assert profile.format == "Nsight Systems export (product version 2022.2.1.31, schema version 2.9.1)"
    assert profile.sparse_kernels == []


def test_rocprof_sample_matches_a_plain_union_from_its_own_json() -> None:
    data = json.loads(gzip.decompress(ROCPROF_SAMPLE.read_bytes()))["rocprofiler-sdk-tool"][0]
    gpus = {a["id"]["handle"]: a["gpu_index"] for a in data["agents"] if a["type"] == 2}
    truth: dict[int, list[tuple[int, int]]] = {}
    for record in data["buffer_records"]["kernel_dispatch"]:
        truth.setdefault(gpus[record["dispatch_info"]["agent_id"]["handle"]], []).append((record["start_timestamp"], record["end_timestamp"]))
    profile = analyze_rocprof(ROCPROF_SAMPLE)
    _assert_matches(profile, truth, {d: len(v) for d, v in truth.items()})
    run = profile.imported.record
    assert run.device is not None and (run.device.family, run.device.name, run.device.compute_capability) == ("rocm", "AMD Instinct MI350X", "gfx950")
    assert profile.sparse_kernels == [] and profile.gemm_kernels > 0  # dense hipBLASLt Cijk_* GEMMs only
    assert KernelClass.DENSE_TC_GEMM.value in run.kernel.by_class_ms


# --------------------------------------------------------------------------- Nsight Systems variations


@pytest.mark.parametrize("metadata", ["EXPORT_META_DATA", "META_DATA_EXPORT"])
@pytest.mark.parametrize(("memset", "extra", "inline"), [("rows", False, False), ("empty", True, False), ("missing", True, True)])
def test_nsys_variations_on_two_devices(tmp_path: Path, metadata: str, memset: str, extra: bool, inline: bool) -> None:
    path = tmp_path / "gen.sqlite"
    spec = ProfileSpec(iterations=5, devices=(0, 3), seed=4)
    sim = write_nsys(path, spec, metadata=metadata, memset=memset, extra_columns=extra, names_inline=inline)  # type: ignore[arg-type]
    assert detect_kind(path) == "nsys"
    for device in (0, 3):
        profile = analyze_nsys(path, device)
        _assert_matches(profile, sim.truth(), _kernels(sim))
        record = profile.imported.record
        assert profile.device == device and record.device is not None and record.device.name == "NVIDIA H100 80GB HBM3"
        assert [layer.name for layer in record.lower.layers][:4] == [f"layers.{i}.mlp" for i in range(4)]  # nested NVTX: innermost names the layer
        assert len(record.schedule.span_samples_ms) >= 4
    assert ("2022.2.1" if metadata == "EXPORT_META_DATA" else "2024.5.1") in profile.format


def test_nsys_without_nvtx_names_layers_by_kernel_and_links_launches(tmp_path: Path) -> None:
    path = tmp_path / "flat.sqlite"
    sim = write_nsys(path, ProfileSpec(iterations=6, host_gap_us=80.0), nvtx=False)
    profile = analyze_nsys(path)
    _assert_matches(profile, sim.truth(), _kernels(sim))
    assert profile.imported.summary.layer_sources == {"kernel": len(profile.imported.record.lower.layers)}
    assert profile.imported.summary.host_wait_ms > 0.5 * profile.imported.summary.idle_ms


def test_nsys_flat_nvtx_and_sparse_kernels(tmp_path: Path) -> None:
    path = tmp_path / "sparse.sqlite"
    write_nsys(path, ProfileSpec(iterations=4, sparse_layers=frozenset({1})), nested=False)
    profile = analyze_nsys(path)
    assert len(profile.sparse_kernels) == 1 and profile.inferred_sparse == []
    paths = {layer.name: layer.path.value for layer in profile.imported.record.lower.layers}
    assert paths["layers.1.mlp"] == "sparse" and paths["layers.0.mlp"] == "dense"


def test_nsys_without_kernels_or_not_a_profile_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite"
    with sqlite3.connect(empty) as db:
        db.execute("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)")
        db.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
    with pytest.raises(UserError, match="no CUDA kernel, memcpy or memset rows"):
        analyze_nsys(empty)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE people (name TEXT)")
    with pytest.raises(UserError, match="without Nsight Systems tables"):
        analyze_nsys(other)


def test_a_device_without_work_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "one.sqlite"
    write_nsys(path, ProfileSpec(iterations=3))
    with pytest.raises(UserError, match="--device 5: no work on that device"):
        analyze_nsys(path, 5)


# --------------------------------------------------------------------------- rocprofv3 variations


@pytest.mark.parametrize("name", ["results.json", "results.json.gz"])
def test_rocprof_json_two_agents(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    sim = write_rocprof_json(path, ProfileSpec(iterations=4, devices=(0, 1)))
    assert detect_kind(path) == "rocprof"
    for device in (0, 1):
        _assert_matches(analyze_rocprof(path, device), sim.truth(), _kernels(sim))


@pytest.mark.parametrize(("guid", "lower"), [(False, False), (True, False), (True, True)])
def test_rocprof_kernel_trace_csv(tmp_path: Path, guid: bool, lower: bool) -> None:
    path = tmp_path / "host_1234_kernel_trace.csv"
    sim = write_kernel_trace_csv(path, ProfileSpec(iterations=4, devices=(2, 5)), guid=guid, lower=lower)
    assert detect_kind(path) == "rocprof"
    profile = analyze_rocprof(path)
    _assert_matches(profile, sim.truth(), _kernels(sim))
    assert profile.imported.record.device is not None and profile.imported.record.device.family == "rocm"


def test_rocprof_csv_reads_device_names_from_agent_info_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "kernel_trace.csv"
    write_kernel_trace_csv(path, ProfileSpec(iterations=3, devices=(2,)))
    (tmp_path / "agent_info.csv").write_text('"Node_Id","Agent_Type","Name","Product_Name","Cu_Count","Wave_Front_Size"\n'
                                             '"0","CPU","AMD EPYC","AMD EPYC","0","0"\n"2","GPU","gfx942","AMD Instinct MI300X","304","64"\n')
    device = analyze_rocprof(path).imported.record.device
    assert device is not None and (device.name, device.compute_capability, device.multiprocessors) == ("AMD Instinct MI300X", "gfx942", 304)


@pytest.mark.parametrize("timestamps", ["inline", "rows"])
def test_rocpd_database(tmp_path: Path, timestamps: str) -> None:
    path = tmp_path / "results.db"
    sim = write_rocpd(path, ProfileSpec(iterations=4, devices=(0, 1), sparse_layers=frozenset({0})), timestamps=timestamps)  # type: ignore[arg-type]
    assert detect_kind(path) == "rocprof"
    profile = analyze_rocprof(path, 1)
    _assert_matches(profile, sim.truth(), _kernels(sim))
    assert profile.sparse_kernels == [ROCM_SPARSE] and profile.inferred_sparse == [ROCM_SPARSE]
    assert profile.imported.record.device is not None and profile.imported.record.device.name == "AMD Instinct MI300X"


def test_rpd_and_truncated_inputs_are_refused(tmp_path: Path) -> None:
    rpd = tmp_path / "trace.rpd"
    with sqlite3.connect(rpd) as db:
        db.execute("CREATE TABLE rocpd_op (id INTEGER, gpuId INTEGER, start INTEGER, end INTEGER)")
        db.execute("CREATE TABLE rocpd_api (id INTEGER, start INTEGER, end INTEGER)")
        db.execute("CREATE TABLE rocpd_string (id INTEGER, string TEXT)")
    assert detect_kind(rpd) == "rocprof"
    with pytest.raises(UserError, match=r"rocmProfileData \(rpd\) trace"):
        analyze_rocprof(rpd)
    cut = tmp_path / "cut.json.gz"
    whole = tmp_path / "whole.json.gz"
    write_rocprof_json(whole, ProfileSpec(iterations=40))
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(UserError, match="truncated or damaged gzip"):
        analyze_rocprof(cut)
    csv_path = tmp_path / "kernel_trace.csv"
    write_kernel_trace_csv(csv_path, ProfileSpec(iterations=3))
    text = csv_path.read_text()
    csv_path.write_text(text[: len(text) - 40])
    with pytest.raises(UserError, match="truncated or damaged"):
        analyze_rocprof(csv_path)


def test_truncated_sqlite_is_refused_by_size(tmp_path: Path) -> None:
    whole = tmp_path / "whole.sqlite"
    write_nsys(whole, ProfileSpec(iterations=30))
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size - 4096 - 100])
    with pytest.raises(UserError, match="truncated"):
        analyze_nsys(cut)


def test_rocm_name_families() -> None:
    assert classify_kernel(ROCM_DENSE) is KernelClass.DENSE_TC_GEMM
    assert classify_kernel(ROCM_SPARSE) is KernelClass.SPARSE_GEMM and sparse_inferred_from_name(ROCM_SPARSE)
    assert classify_kernel("Cijk_Ailk_Bljk_HHS_BH_SPB") is KernelClass.SPARSE_GEMM
    assert not sparse_inferred_from_name("sm90_xmma_sparse_gemm_f16f16_f32") and not sparse_inferred_from_name("void spa_kernel_spa_")


def _nvtx_export_from_stats_csv(path: Path) -> list[tuple[str, str]]:
    """An nsys export whose NVTX_EVENTS are the real ``nsys stats`` push/pop ranges, with one kernel launched 1 ns into each range;
    returns (kernel, the range that holds its launch innermost, by the CSV's own Lvl)."""
    rows = list(csv.DictReader((FIXTURES / "nsys" / "pipit_nbody_nvtx_pushpop_trace.csv").open()))
    spans = [(int(r["Start (ns)"]), int(r["End (ns)"]), int(r["Lvl"]), r["Name"], int(r["TID"]), r["RangeId"]) for r in rows]
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE EXPORT_META_DATA (name TEXT, value TEXT)")
    db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, correlationId INTEGER, "
               "demangledName INTEGER, shortName INTEGER)")
    db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER)")
    db.execute("CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT, globalTid INTEGER, textId INTEGER)")
    db.execute("INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000')")
    expected = []
    device_free = 0
    for k, (start, end, _lvl, name, tid, range_id) in enumerate(sorted(spans)):
        db.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, ?, NULL)", (start, end, name, tid))
        launch = start + 1
        holders = [s for s in spans if s[0] <= launch <= s[1] and s[4] == tid]
        innermost = max(holders, key=lambda s: s[2])
        kernel = f"nbody_kernel_{range_id}"
        db.execute("INSERT INTO StringIds VALUES (?, ?)", (k + 2, kernel))
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, 1)", (launch, launch + 1, tid, k + 1))
        begin = max(launch + 2, device_free)
        device_free = begin + 1_000
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 7, ?, ?, ?)", (begin, device_free, k + 1, k + 2, k + 2))
        expected.append((kernel, innermost[3]))
    db.commit()
    db.close()
    return expected


def test_real_nested_nvtx_ranges_name_layers_as_the_stats_csv_nests_them(tmp_path: Path) -> None:
    path = tmp_path / "nbody.sqlite"
    expected = _nvtx_export_from_stats_csv(path)
    profile = analyze_nsys(path)
    layer_of = {kernel: layer.name for layer in profile.imported.record.lower.layers for kernel in layer.kernels}
    inside = [(kernel, name) for kernel, name in expected if kernel in layer_of]  # kernels of the analysed iterations
    assert len(inside) == len(expected) == 131
    assert [layer_of[kernel] for kernel, _ in inside] == [name for _, name in inside]


def test_nsys_with_pytorch_emit_nvtx_ranges_names_layers_by_op_and_shape(tmp_path: Path) -> None:
    path = tmp_path / "emit.sqlite"
    write_nsys(path, ProfileSpec(iterations=6), emit_nvtx=True, nested=False)
    record = analyze_nsys(path).imported.record
    linears = [layer for layer in record.graph.layers if layer.op.value == "linear"]
    assert [layer.name for layer in linears] == [f"linear#{i} [512x512]" for i in range(4)]  # the seq = N of each call is not a name
    assert all(layer.weight_shape == [512, 512] and layer.input_shape == [64, 512] for layer in linears)
    assert len(record.schedule.span_samples_ms) == 6


def test_rocprof_csv_agent_info_keyed_by_agent_id_and_a_prefix(tmp_path: Path) -> None:
    path = tmp_path / "trace_kernel_trace.csv"
    write_kernel_trace_csv(path, ProfileSpec(iterations=3, devices=(0,)))
    (tmp_path / "trace_agent_info.csv").write_text("Agent_Id,Name\n0,gfx90a\n")
    device = analyze_rocprof(path).imported.record.device
    assert device is not None and (device.family, device.compute_capability) == ("rocm", "gfx90a")


@pytest.mark.parametrize(("name", "kind", "needle"), [
    ("run.nsys-rep", "nsys", "nsys export --type sqlite --output run.sqlite"),
    ("old.qdrep", "nsys", "an Nsight Systems report, read once exported"),
    ("results.pftrace", "rocprof", "a rocprofv3 Perfetto or OTF2 trace"),
])
def test_formats_that_must_be_exported_or_recorded_again_are_named(tmp_path: Path, name: str, kind: str, needle: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"\x00\x01binary report")
    assert detect_kind(path) == kind
    with pytest.raises(UserError, match=re.escape(needle)):
        (analyze_nsys if kind == "nsys" else analyze_rocprof)(path)
