"""A trace's GEMM layers take their class from the dispatch's dtype: bf16 cuBLAS nvjet GEMMs are tensor-core GEMMs."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparsedebug.records.run import KernelClass, OpKind
from sparsedebug.sources.importers.trace.importer import import_trace
from tests.support.tracegen import TraceSpec, generate, write_doc

_GENERATED_GEMM = "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_TNT"


@pytest.mark.parametrize(
    ("kernel", "c10_type", "dtype", "expected"),
    [
        ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT", "c10::BFloat16", "bf16", KernelClass.DENSE_TC_GEMM),
        ("nvjet_tst_64x8_64x16_4x1_v_bz_splitK_TNT", "c10::Half", "fp16", KernelClass.DENSE_TC_GEMM),
        ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT", "float", "fp32", KernelClass.FP32_GEMM),
        ("nvjet_sm90_sss_128x64_64x6_2x1_v_bz_TNT", "c10::BFloat16", "bf16", KernelClass.DENSE_TC_GEMM),
    ],
)
def test_linear_layers_take_the_class_their_dispatch_dtype_gives(
    tmp_path: Path, kernel: str, c10_type: str, dtype: str, expected: KernelClass
) -> None:
    doc, _truth = generate(TraceSpec(layers=3, iterations=2, backward=False, optimizer=False, nccl=False))
    for event in doc["traceEvents"]:
        if event.get("name") == _GENERATED_GEMM:
            event["name"] = kernel
        types = event.get("args", {}).get("Input type")
        if isinstance(types, list):
            event["args"]["Input type"] = [c10_type if t == "c10::Half" else t for t in types]
    path = tmp_path / "trace.json"
    write_doc(path, doc)
    run = import_trace(path)
    lower = {layer.name: layer for layer in run.lower.layers}
    linear = [g for g in run.graph.layers if g.op is OpKind.LINEAR]
    assert len(linear) == 3 and {g.dtype for g in linear} == {dtype}
    assert {lower[g.name].kernel_class for g in linear} == {expected}
