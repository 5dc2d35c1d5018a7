"""Synthetic profiler databases: Nsight Systems SQLite exports and rocprofv3 outputs (JSON, kernel_trace.csv, rocpd).

One simulated run: ``iterations`` x ``layers`` calls on each device. Per call the host spends
``launch_us`` (plus ``host_gap_us`` of its own work before the launch) in a runtime call; the kernel
starts when both the launch has returned and the device is free, and runs ``kernel_us`` (jittered by
``jitter``). Layers named in ``sparse_layers`` run a sparse GEMM kernel, the others a dense one, each
followed by an elementwise kernel; every iteration ends with a DtoH copy (and a memset when
``memset`` is set).

The Nsight Systems writer follows the export schema (tables and columns as ``nsys export --type
sqlite`` writes them; names in ``StringIds``): ``metadata`` picks the version table's spelling
(``EXPORT_META_DATA`` of 2022 or ``META_DATA_EXPORT`` of 2024), ``nvtx`` writes an outer ``step``
push/pop range per iteration and a nested range per layer call (``nested=False``: the layer ranges
only), ``extra_columns`` adds columns later versions might, ``memset`` chooses rows, an empty table or
no table. The rocprofv3 writers follow the documented outputs. Every writer returns the ground truth:
each device's GPU op intervals in ns, so busy and span can be checked independently.
"""

from __future__ import annotations

import csv
import gzip
import json
import random
import sqlite3
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

DENSE_KERNEL = "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_TNT"
SPARSE_KERNEL = "sm90_xmma_sparse_gemm_f16f16_f32_f32_128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cutlass"
GELU_KERNEL = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl, std::array<char*, 2ul> >(int, GeluCUDAKernelImpl, std::array<char*, 2ul>)"
ROCM_DENSE = "Cijk_Alik_Bljk_HHS_BH_MT128x128x64_MI32x32x8x1_SN_1LDSB1_GRVW8"
ROCM_SPARSE = "Cijk_Alik_Bljk_HHS_BH_SPA_MT128x128x64_MI32x32x8x1_SN_1LDSB1_GRVW8"


@dataclass(frozen=True)
class ProfileSpec:
    """One simulated run (times in microseconds)."""

    iterations: int = 8
    layers: int = 4
    devices: tuple[int, ...] = (0,)
    kernel_us: float = 120.0
    gelu_us: float = 15.0
    launch_us: float = 6.0
    host_gap_us: float = 0.0
    iteration_gap_us: float = 300.0
    jitter: float = 0.02
    sparse_layers: frozenset[int] = frozenset()
    seed: int = 0
    memset: bool = True
    rocm: bool = False


@dataclass
class Op:
    """One GPU op of the simulation."""

    kind: Literal["kernel", "memcpy", "memset"]
    name: str
    start: int
    end: int
    device: int
    correlation: int


@dataclass
class Simulation:
    """What a run did: GPU ops, runtime calls (correlation, name, start, end, thread) and annotated ranges."""

    ops: list[Op] = field(default_factory=list)
    calls: list[tuple[int, str, int, int, int]] = field(default_factory=list)
    ranges: list[tuple[str, int, int, int]] = field(default_factory=list)  # name, start, end, thread

    def truth(self) -> dict[int, list[tuple[int, int]]]:
        """Each device's op intervals (ns)."""
        out: dict[int, list[tuple[int, int]]] = {}
        for op in self.ops:
            out.setdefault(op.device, []).append((op.start, op.end))
        return out


def union_ns(intervals: list[tuple[int, int]]) -> int:
    """Length of the union of (start, end) intervals: the test's own busy time."""
    total, end = 0, None
    start = 0
    for a, b in sorted(intervals):
        if end is None or a > end:
            if end is not None:
                total += end - start
            start, end = a, b
        else:
            end = max(end, b)
    return total + ((end - start) if end is not None else 0)


def simulate(spec: ProfileSpec, *, nested: bool = True, emit_nvtx: bool = False) -> Simulation:
    """Run the simulation: one host thread per device, layer ranges inside an iteration range (``emit_nvtx``: one range per
    op, named as PyTorch's emit_nvtx names them, instead of the layer ranges)."""
    rng = random.Random(spec.seed)
    sim = Simulation()
    correlation = 0
    dense, sparse = (ROCM_DENSE, ROCM_SPARSE) if spec.rocm else (DENSE_KERNEL, SPARSE_KERNEL)
    for device in spec.devices:
        thread = 1000 + device
        host = 1_000_000 + device * 1000  # ns
        free = 0
        for it in range(spec.iterations):
            step_start = host
            for layer in range(spec.layers):
                call_start = host
                host += int(spec.host_gap_us * 1e3)
                for name, dur in ((sparse if layer in spec.sparse_layers else dense, spec.kernel_us), (GELU_KERNEL, spec.gelu_us)):
                    correlation += 1
                    launch_end = host + int(spec.launch_us * 1e3)
                    if emit_nvtx:  # torch.autograd.profiler.emit_nvtx(record_shapes=True): one range per op, a changing seq
                        op = ("aten::linear, seq = {}, sizes = [[64, 512], [512, 512], [512]]" if name != GELU_KERNEL
                              else "aten::gelu, seq = {}, sizes = [[64, 512]]")
                        sim.ranges.append((op.format(correlation + 1000 * it), host - 200, launch_end + 200, thread))
                    sim.calls.append((correlation, "cudaLaunchKernel_v7000" if not spec.rocm else "hipLaunchKernel", host, launch_end, thread))
                    start = max(launch_end + 2_000, free)
                    end = start + int(dur * 1e3 * (1 + rng.uniform(-spec.jitter, spec.jitter)))
                    sim.ops.append(Op("kernel", name, start, end, device, correlation))
                    free = end
                    host = launch_end + 500
                if not emit_nvtx:
                    sim.ranges.append((f"layers.{layer}.mlp", call_start, host, thread))
            correlation += 1
            copy_start = max(host + 3_000, free)
            sim.calls.append((correlation, "cudaMemcpy_v3020", host, copy_start + 8_000, thread))
            sim.ops.append(Op("memcpy", "Memcpy DtoH", copy_start, copy_start + 8_000, device, correlation))
            free = host = copy_start + 8_000
            if spec.memset:
                correlation += 1
                sim.calls.append((correlation, "cudaMemsetAsync_v3020", host, host + 4_000, thread))
                sim.ops.append(Op("memset", "Memset (Device)", host + 5_000, host + 7_000, device, correlation))
                free = host + 7_000
                host += 8_000
            if nested:
                sim.ranges.append(("train_step", step_start, host, thread))
            host += int(spec.iteration_gap_us * 1e3)
    return sim


# --------------------------------------------------------------------------- Nsight Systems


NsysMemset = Literal["rows", "empty", "missing"]


def write_nsys(
    path: Path, spec: ProfileSpec, *, metadata: Literal["EXPORT_META_DATA", "META_DATA_EXPORT"] = "META_DATA_EXPORT", nvtx: bool = True,
    nested: bool = True, extra_columns: bool = False, memset: NsysMemset = "rows", names_inline: bool = False, emit_nvtx: bool = False,
) -> Simulation:
    """Write an Nsight Systems SQLite export of ``spec``'s run; the simulation is the ground truth."""
    sim = simulate(spec, nested=nested, emit_nvtx=emit_nvtx)
    if memset != "rows":
        sim.ops = [op for op in sim.ops if op.kind != "memset"]
    if path.exists():
        path.unlink()
    db = sqlite3.connect(path)
    extra = ", futureColumn INTEGER, anotherNewOne TEXT" if extra_columns else ""
    strings: dict[str, int] = {}

    def sid(text: str) -> int:
        return strings.setdefault(text, len(strings) + 1)

    db.execute(f"CREATE TABLE {metadata} (name TEXT NOT NULL, value TEXT)")
    db.executemany(f"INSERT INTO {metadata} VALUES (?, ?)", [("EXPORT_PRODUCT_VERSION", "2024.5.1" if metadata == "META_DATA_EXPORT" else "2022.2.1"),
                                                              ("EXPORT_SCHEMA_VERSION", "3.11.1" if metadata == "META_DATA_EXPORT" else "2.9.1")])
    db.execute("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)")
    db.execute(f"CREATE TABLE TARGET_INFO_GPU (vmId INTEGER, id INTEGER NOT NULL, name TEXT, totalMemory INTEGER, smCount INTEGER, chipName TEXT, "
               f"cuDevice INTEGER, threadsPerWarp INTEGER, computeMajor INTEGER, computeMinor INTEGER{extra})")
    for device in spec.devices:
        db.execute("INSERT INTO TARGET_INFO_GPU (vmId, id, name, totalMemory, smCount, chipName, cuDevice, threadsPerWarp, computeMajor, computeMinor) "
                   "VALUES (0, ?, 'NVIDIA H100 80GB HBM3', 85899345920, 132, 'GH100', ?, 32, 9, 0)", (device, device))
    db.execute("CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT)")
    db.execute("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1764892800000000000, '2025-12-05T00:00:00', '2025-12-05T00:00:00')")
    name_type = "TEXT" if names_inline else "INTEGER"
    db.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER, "
               f"streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, demangledName {name_type} NOT NULL, shortName {name_type} NOT NULL, "
               f"gridX INTEGER, blockX INTEGER{extra})")
    db.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER, "
               f"streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL{extra})")
    if memset != "missing":
        db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER, "
                   "streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL)")
    db.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, "
               f"correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER{extra})")
    for op in sim.ops:
        if op.kind == "kernel":
            name: object = op.name if names_inline else sid(op.name)
            short: object = op.name.split("(")[0] if names_inline else sid(op.name.split("(")[0])
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, globalPid, demangledName, "
                       "shortName, gridX, blockX) VALUES (?, ?, ?, 1, 7, ?, 100, ?, ?, 132, 256)", (op.start, op.end, op.device, op.correlation, name, short))
        elif op.kind == "memcpy":
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, copyKind) "
                       "VALUES (?, ?, ?, 1, 7, ?, 100, 4096, 2)", (op.start, op.end, op.device, op.correlation))
        else:
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?, ?, ?, 1, 7, ?, 100, 0, 4096)", (op.start, op.end, op.device, op.correlation))
    for corr, name, start, end, thread in sim.calls:
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue) VALUES "
                   "(?, ?, 0, ?, ?, ?, 0)", (start, end, thread, corr, sid(name)))
    if nvtx:
        db.execute("CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, category INTEGER, "
                   f"color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER{extra})")
        db.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (10, NULL, 75, 'domain', 1000)")
        for k, (name, start, end, thread) in enumerate(sim.ranges):
            if k % 2:  # half of them by registered string, as nvtxRangePushEx with a registered handle writes
                db.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, textId, globalTid) VALUES (?, ?, 59, ?, ?)", (start, end, sid(name), thread))
            else:
                db.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?, ?, 59, ?, ?)", (start, end, name, thread))
    db.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, s) for s, i in strings.items()])
    db.commit()
    db.close()
    return sim


# --------------------------------------------------------------------------- rocprofv3


def _rocm(spec: ProfileSpec) -> Simulation:
    sim = simulate(replace(spec, rocm=True, memset=False), nested=False)
    sim.ops = [op for op in sim.ops if op.kind == "kernel"]
    return sim


def write_rocprof_json(path: Path, spec: ProfileSpec) -> Simulation:
    """rocprofv3 --output-format json (gzip when ``path`` ends in .gz): GPU agents after a CPU agent, names in kernel_symbols."""
    sim = _rocm(spec)
    names = sorted({op.name for op in sim.ops})
    agents = [{"id": {"handle": 50}, "type": 1, "name": "AMD EPYC", "product_name": "AMD EPYC", "node_id": 0, "gpu_index": -1}]
    agents += [{"id": {"handle": 60 + d}, "type": 2, "name": "gfx942", "product_name": "AMD Instinct MI300X", "node_id": d + 1,
                "logical_node_type_id": d, "gpu_index": d, "cu_count": 304, "wave_front_size": 64} for d in spec.devices]
    dispatches = [{"kind": 11, "thread_id": 1000 + op.device, "correlation_id": {"internal": op.correlation, "external": 0},
                   "start_timestamp": op.start, "end_timestamp": op.end, "dispatch_info": {"agent_id": {"handle": 60 + op.device},
                   "queue_id": {"handle": 1}, "kernel_id": names.index(op.name) + 1, "dispatch_id": k}} for k, op in enumerate(sim.ops)]
    doc = {"rocprofiler-sdk-tool": [{"metadata": {"pid": 1}, "agents": agents,
                                     "kernel_symbols": [{"kernel_id": i + 1, "kernel_name": f"{n}.kd", "formatted_kernel_name": n}
                                                        for i, n in enumerate(names)],
                                     "buffer_records": {"kernel_dispatch": dispatches, "memory_copy": [], "hip_api": []}}]}
    data = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(data, mtime=0) if path.name.endswith(".gz") else data)
    return sim


def write_kernel_trace_csv(path: Path, spec: ProfileSpec, *, guid: bool = False, lower: bool = False) -> Simulation:
    """rocprofv3 --output-format csv's kernel_trace.csv, header spelled in lower case when ``lower``, a Guid column when ``guid``."""
    sim = _rocm(spec)
    header = ["Kind", "Agent_Id", "Queue_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name", "Correlation_Id", "Start_Timestamp", "End_Timestamp"]
    if guid:
        header.insert(0, "Guid")
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, quoting=csv.QUOTE_ALL)
        writer.writerow([h.lower() for h in header] if lower else header)
        for k, op in enumerate(sim.ops):
            row = ["KERNEL_DISPATCH", f"Agent {op.device}", "1", str(1000 + op.device), str(k), "1", op.name, str(op.correlation), str(op.start), str(op.end)]
            writer.writerow((["0f3c-guid"] if guid else []) + row)
    return sim


def write_rocpd(path: Path, spec: ProfileSpec, *, timestamps: Literal["inline", "rows"] = "inline") -> Simulation:
    """A rocpd database as rocprofv3 writes it: uuid-suffixed tables behind ``rocpd_*`` views; timestamps inline or in rocpd_timestamp."""
    sim = _rocm(spec)
    if path.exists():
        path.unlink()
    db = sqlite3.connect(path)
    u = "_00000450_565d_765d_bc41_19a2073d19ee"
    db.execute(f"CREATE TABLE rocpd_string{u} (id INTEGER PRIMARY KEY, guid TEXT, string TEXT)")
    db.execute(f"CREATE TABLE rocpd_info_agent{u} (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, type TEXT, absolute_index INTEGER, "
               "logical_index INTEGER, type_index INTEGER, uuid INTEGER, name TEXT, model_name TEXT, vendor_name TEXT, product_name TEXT, "
               "user_name TEXT, extdata JSONB)")
    db.execute(f"INSERT INTO rocpd_info_agent{u} (id, type, absolute_index, logical_index, type_index, name, product_name) "
               "VALUES (1, 'CPU', 0, 0, 0, 'AMD EPYC', 'AMD EPYC')")
    for d in spec.devices:
        db.execute(f"INSERT INTO rocpd_info_agent{u} (id, type, absolute_index, logical_index, type_index, name, product_name) "
                   "VALUES (?, 'GPU', ?, ?, ?, 'gfx942', 'AMD Instinct MI300X')", (10 + d, d + 1, d + 1, d))
    db.execute(f"CREATE TABLE rocpd_info_kernel_symbol{u} (id INTEGER PRIMARY KEY, guid TEXT, kernel_name TEXT, display_name TEXT, extdata JSONB)")
    names = sorted({op.name for op in sim.ops})
    db.executemany(f"INSERT INTO rocpd_info_kernel_symbol{u} (id, kernel_name, display_name) VALUES (?, ?, ?)",
                   [(i + 1, f"{n}.kd", n) for i, n in enumerate(names)])
    if timestamps == "inline":
        db.execute(f"CREATE TABLE rocpd_kernel_dispatch{u} (id INTEGER PRIMARY KEY, guid TEXT, agent_id INTEGER, kernel_id INTEGER, queue_id INTEGER, "
                   "stream_id INTEGER, start INTEGER, end INTEGER, region_name_id INTEGER, event_id INTEGER, extdata JSONB)")
        db.executemany(f"INSERT INTO rocpd_kernel_dispatch{u} (agent_id, kernel_id, queue_id, start, end) VALUES (?, ?, 1, ?, ?)",
                       [(10 + op.device, names.index(op.name) + 1, op.start, op.end) for op in sim.ops])
    else:
        db.execute(f"CREATE TABLE rocpd_timestamp{u} (id INTEGER PRIMARY KEY, value INTEGER, track_id INTEGER)")
        db.execute(f"CREATE TABLE rocpd_track{u} (id INTEGER PRIMARY KEY, agent_id INTEGER, queue_id INTEGER)")
        db.executemany(f"INSERT INTO rocpd_track{u} VALUES (?, ?, 1)", [(d + 1, 10 + d) for d in spec.devices])
        db.execute(f"CREATE TABLE rocpd_kernel_dispatch{u} (id INTEGER PRIMARY KEY, guid TEXT, track_id INTEGER, kernel_id INTEGER, start_id INTEGER, "
                   "end_id INTEGER, region_name_id INTEGER, event_id INTEGER, extdata BLOB)")
        for k, op in enumerate(sim.ops):
            db.execute(f"INSERT INTO rocpd_timestamp{u} VALUES (?, ?, ?)", (2 * k + 1, op.start, op.device + 1))
            db.execute(f"INSERT INTO rocpd_timestamp{u} VALUES (?, ?, ?)", (2 * k + 2, op.end, op.device + 1))
            db.execute(f"INSERT INTO rocpd_kernel_dispatch{u} (track_id, kernel_id, start_id, end_id) VALUES (?, ?, ?, ?)",
                       (op.device + 1, names.index(op.name) + 1, 2 * k + 1, 2 * k + 2))
        db.execute(f"CREATE VIEW rocpd_timestamp AS SELECT * FROM rocpd_timestamp{u}")
        db.execute(f"CREATE VIEW rocpd_track AS SELECT * FROM rocpd_track{u}")
    for view in ("rocpd_string", "rocpd_info_agent", "rocpd_info_kernel_symbol"):
        db.execute(f"CREATE VIEW {view} AS SELECT * FROM {view}{u}")
    # the views of newer writers decompress extdata with rocprofv3's own SQL function
    db.execute(f"CREATE VIEW rocpd_kernel_dispatch AS SELECT *, lz4_decompress(extdata) AS extdata_text FROM rocpd_kernel_dispatch{u}")
    db.commit()
    db.close()
    return sim
