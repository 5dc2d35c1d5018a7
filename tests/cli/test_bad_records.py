"""Bad records, absurd values and low memory: a one-line error from a named check, exit 2, never a traceback.

Each case a new user hit (issue 28): the message names the field, option or limit that
refused it, and says what to do; ``--json`` errors are a JSON object on stdout as well.
"""

from __future__ import annotations

import json
import math
import resource
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import typer
import yaml
from typer.testing import CliRunner

from sparsedebug.cli.common import JsonOption, handle_errors
from sparsedebug.core import budget
from sparsedebug.core.errors import UserError
from sparsedebug.core.io import save_record
from sparsedebug.records.notes import Note
from sparsedebug.render.words.notes import say_all
from tests.conftest import CLI_ENV, FIXTURES, assert_clean_error, assert_json_error, invoke
from tests.support.proc import run_cli
from tests.support.synth import dense_run, sparse_run

WORKLOADS = FIXTURES / "workloads"
SMI = str(FIXTURES / "h200" / "nvidia_smi_short.csv")
TRACE = str(FIXTURES / "h200" / "trace_sparse_mlp_T2048.json.gz")


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    save_record(dense_run(5.0), base)
    save_record(sparse_run(3.5), cand)
    return base, json.loads(cand.read_text())


def _declared(tmp_path: Path, **update: Any) -> Path:
    data = yaml.safe_load((WORKLOADS / "planted" / "base.yaml").read_text())
    data.update(update)
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# --------------------------------------------------------------------------- tracebacks that were


def test_predict_projects_a_model_workload_without_a_traceback() -> None:
    result = invoke(["predict", str(WORKLOADS / "minilm_2of4_regressed.yaml"), "--tokens", "128", "--json"])
    assert result.exit_code == 0 and "Traceback" not in result.stderr, result.stderr  # was zip(): argument 2 is shorter
    assert json.loads(result.stdout)["workload"] == "minilm_2of4_regressed"


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        (("outcome", "latency_samples_ms", 3), -1.0, "outcome.latency_samples_ms.3: Input should be greater than 0"),
        (("kernel", "layers", 0, "samples_ms", 0), 0.0, "kernel.layers.0.samples_ms.0: Input should be greater than 0"),
        (("schedule", "busy_samples_ms", 1), -0.5, "schedule.busy_samples_ms.1: Input should be greater than or equal to 0"),
        (("outcome", "latency_samples_ms", 2), math.nan, "outcome.latency_samples_ms.2: Input should be a finite number"),
    ],
)
def test_a_run_record_with_bad_samples_is_refused_on_load(
    runs: tuple[Path, dict[str, Any]], tmp_path: Path, field: tuple[Any, ...], value: float, needle: str
) -> None:
    base, doc = runs
    node: Any = doc
    for key in field[:-1]:
        node = node[key]
    node[field[-1]] = value
    cand = tmp_path / "bad.yaml"  # YAML holds NaN as .nan; strict JSON cannot (next test)
    cand.write_text(yaml.safe_dump(doc))
    junit = tmp_path / "gate.xml"
    assert_clean_error(invoke(["bisect", str(base), str(cand)]), 2, f"bad.yaml: {needle}")
    assert_clean_error(invoke(["gate", str(base), str(cand), "--junit", str(junit)]), 2, needle)
    assert not junit.exists()  # bad input leaves no JUnit file


def test_nan_in_a_json_record_is_not_json(runs: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    base, doc = runs
    doc["outcome"]["latency_samples_ms"][0] = math.nan
    cand = tmp_path / "nan.json"
    cand.write_text(json.dumps(doc))  # Python writes a bare NaN; strict parsers reject it
    assert_clean_error(invoke(["bisect", str(base), str(cand)]), 2, "nan.json: NaN is not JSON (strict JSON has no NaN or Infinity)")


def test_a_memory_error_is_one_line_naming_the_limits() -> None:
    app = typer.Typer()

    @app.command()
    @handle_errors
    def grow(json_out: JsonOption = False) -> None:
        from numpy._core._exceptions import _ArrayMemoryError

        raise _ArrayMemoryError((4096, 4096), np.dtype(np.float32))

    runner = CliRunner(env=CLI_ENV)
    result = runner.invoke(app, [], catch_exceptions=True)
    assert_clean_error(result, 2, "out of memory: Unable to allocate 64.0 MiB", "of memory", "raise the limit")
    assert len(result.stderr.splitlines()) == 1
    assert_json_error(runner.invoke(app, ["--json"], catch_exceptions=True), 2, "out of memory")


def _limit_address_space(megabytes: int) -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_AS, (megabytes << 20, resource.RLIM_INFINITY))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status are Linux's")
def test_the_address_space_limit_counts_as_memory() -> None:
    import subprocess

    from tests.support.proc import ENV

    # Under ulimit -v the BLAS may fail to start (refused by the start-up check) or the bench is refused by the
    # budget, which counts the room under the limit: both name the limit, neither is a traceback or a signal.
    result = subprocess.run(
        [sys.executable, "-m", "sparsedebug", "bench", "kernel", "--shape", "4096x4096", "--tokens", "1", "--rounds", "2"],
        env={**ENV, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=120, check=False,
        preexec_fn=lambda: _limit_address_space(400),
    )
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "ulimit -v" in result.stderr and "Traceback" not in result.stderr and "interrupted" not in result.stderr


MAP_FAILURE = "/usr/lib/python3/site-packages/scipy/optimize/_highspy/_core.cpython-311-x86_64-linux-gnu.so: failed to map segment from shared object"


def test_a_library_that_cannot_be_mapped_is_one_line_naming_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "address_space_limit", lambda: 700_000 << 10)
    app = typer.Typer()

    @app.command()
    @handle_errors
    def load(json_out: JsonOption = False, missing: bool = False) -> None:
        raise ImportError("No module named 'scipy'" if missing else MAP_FAILURE)

    runner = CliRunner(env=CLI_ENV)
    result = runner.invoke(app, [], catch_exceptions=True)
    assert_clean_error(result, 2, "a shared library could not be loaded: scipy/optimize/_highspy/_core.cpython-311-x86_64-linux-gnu.so: "
                       "failed to map segment from shared object", "address-space limit (ulimit -v) 684 MiB", "raise the limit")
    assert len(result.stderr.splitlines()) == 1
    assert_json_error(runner.invoke(app, ["--json"], catch_exceptions=True), 2, "could not be loaded")
    # any other ImportError is a broken install or our bug: not dressed up as the user's limit
    assert isinstance(runner.invoke(app, ["--missing"], catch_exceptions=True).exception, ImportError)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is Linux's")
def test_a_replay_under_a_tight_address_space_is_one_line() -> None:
    """The issue's case: ``(ulimit -v 700000; sparsedebug replay ...minilm...)`` died in scipy's shared object;
    whichever step the limit stops (the BLAS, a library, an allocation), it is one line naming the limit, exit 2."""
    import subprocess

    from tests.support.proc import ENV

    result = subprocess.run(
        [sys.executable, "-m", "sparsedebug", "replay", str(WORKLOADS / "minilm_2of4_regressed.yaml"), "--repeats", "3"],
        env={**ENV, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=300, check=False,
        preexec_fn=lambda: _limit_address_space(700_000 >> 10),
    )
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and "Traceback" not in result.stderr, (result.returncode, result.stderr[-2000:])
    assert len(errors) == 1 and "ulimit -v" in errors[0], result.stderr[-2000:]


def test_available_memory_takes_the_room_under_the_address_space_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "address_space_limit", lambda: 512 << 20)
    monkeypatch.setattr(budget, "_address_space_used", lambda: 500 << 20)
    monkeypatch.setattr(budget, "_meminfo_available", lambda: 64 << 30)
    monkeypatch.setattr(budget, "_cgroup_room", lambda: None)
    assert budget.available_memory() == (12 << 20, "left under the address-space limit (ulimit -v)")
    with pytest.raises(UserError, match=r"needs about 1 GiB of memory, more than half of the 12 MiB of memory left under the address-space"):
        budget.check_budget(budget.Cost(bytes=1 << 30, flops=0, calls=0, what="x"), timed=False)


class _SignalOnImport:
    """A finder that does what OpenBLAS does when it cannot start its threads: raise SIGINT at the process."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "numpy":
            signal.raise_signal(signal.SIGINT)
            raise ImportError("OpenBLAS blas_thread_init: pthread_create failed")
        return None


@pytest.fixture
def numpy_unloaded(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    saved = sys.modules.pop("numpy")
    finder = _SignalOnImport()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        sys.modules["numpy"] = saved


def test_a_sigint_from_a_blas_that_cannot_start_is_not_an_interruption(monkeypatch: pytest.MonkeyPatch, numpy_unloaded: None) -> None:
    monkeypatch.setattr(budget, "address_space_limit", lambda: 150 << 20)
    with pytest.raises(UserError, match=r"numpy's BLAS could not start its threads under the address-space limit \(ulimit -v\) of 150 MiB"):
        budget.start_numpy_within_limits()


# --------------------------------------------------------------------------- accepted silently, now refused or said


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("nan", "--max-clock nan: expected a clock in MHz, above 0 and at most 10,000"),
        ("inf", "--max-clock inf: expected a clock in MHz"),
        ("1e30", "--max-clock 1e+30: expected a clock in MHz"),
        ("-5", "--max-clock -5: expected a clock in MHz"),
        ("100", "--max-clock 100: below the SM clock of 1980 MHz"),
    ],
)
def test_max_clock_is_bounded_and_at_least_the_clocks_logged(value: str, needle: str) -> None:
    assert_json_error(invoke(["import", "smi", SMI, "--max-clock", value, "--json"]), 2, needle)


def test_json_output_is_strict(tmp_path: Path) -> None:
    from sparsedebug.cli.common import emit_json

    app = typer.Typer()

    @app.command()
    def show() -> None:
        emit_json({"clock": math.nan, "drop": [1.0, math.inf]})

    result = CliRunner().invoke(app, [])
    assert json.loads(result.stdout, parse_constant=lambda c: pytest.fail(f"bare {c}")) == {"clock": None, "drop": [1.0, None]}


@pytest.mark.parametrize(("version", "needle"), [(None, "schema_version: missing field; add 'schema_version: 1'"), (0, "schema_version: 0 is not a schema version")])
def test_a_workload_says_its_schema_version(tmp_path: Path, version: int | None, needle: str) -> None:
    data = yaml.safe_load((WORKLOADS / "planted" / "base.yaml").read_text())
    del data["schema_version"]
    if version is not None:
        data["schema_version"] = version
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(data))
    assert_clean_error(invoke(["lower", str(path)]), 2, f"w.yaml: {needle}")


def test_eval_tokens_have_a_limit(tmp_path: Path) -> None:
    data = yaml.safe_load((WORKLOADS / "minilm_dense.yaml").read_text())
    data["model"]["eval_tokens"] = 10**12
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(data))
    assert_clean_error(invoke(["lower", str(path)]), 2, "m.yaml: model.eval_tokens: Input should be less than or equal to 16777216")


def test_predict_and_bench_share_the_k_divisible_rule() -> None:
    rule = "K=4097 is not divisible by M=4 of pattern 2:4"
    assert_clean_error(invoke(["predict", "--shape", "4096x4097", "--tokens", "128"]), 2, f"--shape 4096x4097: {rule}")
    assert_clean_error(invoke(["bench", "kernel", "--shape", "4096x4097", "--tokens", "1"]), 2, f"--shape 4096x4097: {rule}")


def test_predict_says_when_the_backend_lowers_a_shape_dense() -> None:
    result = invoke(["predict", "--shape", "4096x4100", "--tokens", "128", "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    layer = report["results"][0]["layers"][0]
    assert layer["path"] == "dense"
    assert "h200-cusparselt lowers it dense (shape_not_aligned" in say_all([Note.model_validate(n) for n in layer["notes"]])
    assert report["break_even"] == []  # no break-even for a shape that cannot run sparse


def test_a_block_taller_than_its_layer_is_refused(tmp_path: Path) -> None:
    assert_clean_error(
        invoke(["bench", "kernel", "--shape", "512x512", "--pattern", "1000000:2:4", "--tokens", "1", "--rounds", "1"]), 2,
        "--shape 512x512: block V=1000000 of pattern 1000000:2:4 is taller than the 512 rows it applies to; use V <= 512",
    )
    data = yaml.safe_load((WORKLOADS / "planted" / "base.yaml").read_text())
    data["layers"][0]["sparsity"] = "1000000:2:4"
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(data))
    assert_clean_error(invoke(["lower", str(path)]), 2, "layer 'fc0'", "sparsity: block V=1000000", "taller than the 512 rows")


def test_a_three_part_pattern_is_said_in_words() -> None:
    result = invoke(["bench", "kernel", "--shape", "64x64", "--pattern", "2:4:8", "--tokens", "1", "--rounds", "1", "--json"])
    assert result.exit_code == 0, result.stderr
    assert "pattern 2:4:8: V:N:M, blocks of V=2 rows sharing one choice of 4 of every 8 weights" in result.stderr


def test_an_unquoted_pattern_stays_a_pattern(tmp_path: Path) -> None:
    path = _declared(tmp_path)
    path.write_text(path.read_text().replace("'32:2:4'", "2:4"))  # YAML 1.1 would read 2:4 as the base-60 number 124
    result = invoke(["lower", str(path), "--json"])
    assert result.exit_code == 0, result.stderr
    assert [layer["path"] for layer in json.loads(result.stdout)["layers"] if layer["name"].startswith("fc")] == ["sparse", "sparse"]


# --------------------------------------------------------------------------- messages that say what to do


def test_an_output_under_a_file_says_so(tmp_path: Path) -> None:
    blocker = tmp_path / "f.txt"
    blocker.write_text("x")
    result = invoke(["replay", "minilm_dense", "-o", str(blocker / "run.json")])
    assert_clean_error(result, 2, f"{blocker / 'run.json'} (-o): {blocker} is a file, not a directory")
    assert "reading" not in result.stderr  # checked before the replay loads anything


def test_a_folder_given_as_an_output_file(tmp_path: Path) -> None:
    result = invoke(["import", "trace", TRACE, "--html", str(tmp_path)])
    assert_clean_error(result, 2, f"{tmp_path} (--html): is a directory; give a file name inside it")


def test_a_missing_output_folder_says_to_create_it(tmp_path: Path) -> None:
    result = invoke(["import", "trace", TRACE, "-o", str(tmp_path / "no" / "run.json")])
    assert_clean_error(result, 2, f"output directory {tmp_path / 'no'} does not exist; create it first")


def test_audit_of_a_folder_and_of_a_non_npz(tmp_path: Path) -> None:
    assert_clean_error(invoke(["audit", str(tmp_path)]), 2, f"{tmp_path}: is a directory; give a checkpoint file")
    fake = tmp_path / "w.npz"
    fake.write_bytes(bytes(range(200)))
    result = invoke(["audit", str(fake)])
    assert_clean_error(result, 2, "w.npz: not a .npz archive (a .npz is a zip of .npy arrays")
    assert "pickle" not in result.stderr
    single = tmp_path / "one.npz"
    with single.open("wb") as handle:
        np.save(handle, np.ones(4))
    assert_clean_error(invoke(["audit", str(single)]), 2, "one.npz: a single .npy array, not a .npz archive")


def test_audit_of_a_dense_checkpoint_says_dense(tmp_path: Path) -> None:
    path = tmp_path / "dense.npz"
    rng = np.random.default_rng(0)
    np.savez(path, **{"l0.weight": rng.standard_normal((64, 64)).astype(np.float32)})
    result = invoke(["audit", str(path)])
    assert result.exit_code == 0, result.stderr
    assert "a dense checkpoint: no matrix is meant to be 2:4" in result.stdout and "100.00%" not in result.stdout


def test_an_unknown_model_names_the_field_and_the_known_models(tmp_path: Path) -> None:
    data = yaml.safe_load((WORKLOADS / "minilm_dense.yaml").read_text())
    data["model"] = {"name": "no-such-model"}
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(data))
    assert_clean_error(invoke(["lower", str(path)]), 2, "model.name: 'no-such-model' is not a registered model (minilm-l6, smollm2-135m)")


def test_a_count_in_exponent_notation_names_its_limit(tmp_path: Path) -> None:
    path = _declared(tmp_path)
    path.write_text(path.read_text().replace("repeats: 15", "repeats: 1e20"))
    assert_clean_error(invoke(["lower", str(path)]), 2, "w.yaml: repeats: 1e+20 is far too large for this count; at most 10,000")
    path.write_text(path.read_text().replace("repeats: 1e20", "repeats: 1e5"))
    assert_clean_error(invoke(["lower", str(path)]), 2, "w.yaml: repeats: Input should be less than or equal to 10000")


def test_json_errors_are_a_json_object_on_stdout(runs: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    base, _ = runs
    assert_json_error(invoke(["bisect", str(base), str(tmp_path / "missing.json"), "--json"]), 2, "missing.json: file not found")
    # a usage error of a --json call too
    error = assert_json_error(invoke(["bisect", str(base), str(base), "--alpha", "7", "--json"]), 2)
    assert "--alpha" in str(error["message"])


def test_the_process_exit_and_stdout_of_a_json_error() -> None:
    result = run_cli(["predict", "--shape", "4096x4097", "--tokens", "128", "--json"])
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert json.loads(result.stdout)["error"]["message"] == "--shape 4096x4097: K=4097 is not divisible by M=4 of pattern 2:4"
    assert result.stderr == "error: --shape 4096x4097: K=4097 is not divisible by M=4 of pattern 2:4\n"
