"""The command line under bad input: every command answers a refused input, a file it may not
write or a full disk in one line with exit code 2 (or 3 for the machine), never a traceback, and
leaves nothing half-written; property tests throw generated arguments and files at it."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phasebench.build import generate
from phasebench.specs import SplitSpec
from support.cli import run
from support.hostile import replaced
from support.repos import SPEC

ROOT = Path(__file__).resolve().parents[2]


FEW = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


def assert_one_line(code: int, err: str, *words: str) -> None:
    assert code == 2, (code, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, (word, err)


def cli(*args: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "phasebench", *args], capture_output=True,
                          text=True, env=env, timeout=timeout, **kwargs)  # fmt: skip


def _generate(out: str | Path, *extra: str) -> list[str]:
    return ["generate", "kv", "--length", "256", "--n-base", "16", "--out", str(out), "--quiet",
            *extra]  # fmt: skip


def test_out_that_is_a_file_or_under_a_file(tmp_path):
    file = tmp_path / "file.txt"
    file.write_text("mine")
    assert_one_line(*run(_generate(file, "--overwrite"))[::2], "not a folder")
    assert_one_line(*run(_generate(file / "sub"))[::2], "file.txt")
    assert file.read_text() == "mine"


def test_out_on_a_filesystem_that_refuses_writes(tmp_path):
    """Tests run as root, whom chmod does not stop; sysfs refuses a new folder even to root
    (EPERM), which exercises the same path as a read-only filesystem (EROFS)."""
    if not Path("/sys/kernel").is_dir():
        pytest.skip("needs Linux sysfs")
    assert_one_line(*run(_generate("/sys/phasebench-test-out"))[::2])
    assert not Path("/sys/phasebench-test-out").exists()


@pytest.mark.slow
def test_a_full_disk_mid_write_leaves_nothing_half_written(tmp_path):
    """A file-size limit (RLIMIT_FSIZE, EFBIG on the write that passes it) stands in for a full
    disk: the write fails part-way through a parquet file."""
    out = tmp_path / "out"

    def small_files():
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (8 * 1024, 8 * 1024))  # parquet: ~13 KB

    proc = cli(*_generate(out), preexec_fn=small_files)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not out.exists()


def test_a_non_regular_file_is_never_replaced(tmp_path, kv_split, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code, _, err = run(["leaderboard", "validate", str(tmp_path / "none"), "--report", str(fifo)])
    assert_one_line(code, err, "not a regular file")
    assert fifo.is_fifo()


def test_inspect_row_out_of_range(kv_split):
    assert_one_line(*run(["inspect", str(kv_split), "--row", "99999"])[::2], "row", "128")
    assert_one_line(*run(["inspect", str(kv_split), "--row", "-1"])[::2])
    code, out, _ = run(["inspect", str(kv_split), "--row", "127", "--no-color"])
    assert code == 0 and "b00015" in out


def test_verify_sample_must_be_positive(kv_split):
    assert_one_line(*run(["verify", str(kv_split), "--sample", "-5"])[::2], "--sample")


def _samples(folder: Path, lines: list[bytes]) -> Path:
    run_dir = folder / "model"
    run_dir.mkdir(parents=True)
    path = run_dir / "samples_phasebench_kv_2026-01-01T00-00-00.000000.jsonl"
    path.write_bytes(b"".join(lines))
    return run_dir


def _doc(**changes) -> dict:
    doc = {"id": "kv-4096-b00000-p0", "family": "kv", "length": 4096, "phase_modulus": 8,
           "phase": 0, "base_id": 0}  # fmt: skip
    doc.update(changes)
    return doc


def _line(doc: dict, acc) -> bytes:
    return (json.dumps({"doc": doc, "acc": acc, "filter": "none"}) + "\n").encode()


@pytest.mark.parametrize(
    ("lines", "words"),
    [
        ([_line({k: v for k, v in _doc().items() if k != "phase_modulus"}, 1.0)],
         ["phase_modulus"]),
        ([_line(_doc(phase="zero"), 1.0)], ["phase"]),
        ([b"[1, 2, 3]\n"], ["JSON object"]),
        ([b'{"doc": "\xff\xfe"}\n'], ["JSON"]),
        ([_line(_doc(), 1.0), b'{"doc": ' + json.dumps(_doc(phase=1)).encode()
          + b', "acc": NaN}\n'], ["NaN"]),
        ([_line(_doc(), 1.0), _line(_doc(phase=1), "NaN")], ["acc"]),
        ([_line(_doc(), 1.0), _line(_doc(phase=1.5), 1.0)], ["phase is float"]),
        ([_line(_doc(), 1.0), _line(_doc(phase=True), 1.0)], ["phase is bool"]),
    ],
    ids=["no phase_modulus", "phase zero", "not an object", "bad utf-8", "NaN literal",
         "NaN string", "phase 1.5", "phase true"],
)  # fmt: skip
def test_report_refuses_broken_samples_with_one_line(tmp_path, lines, words):
    folder = _samples(tmp_path, lines)
    assert_one_line(*run(["report", str(folder), "--n-boot", "0", "--n-perm", "0"])[::2], *words)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--modulus", "4096", "--length", "1024", "--n-base", "8192"], ["rows", "limit"]),
        (["--length", "4194304"], ["tokens", "limit"]),
    ],
)
def test_a_spec_over_budget_is_refused_at_once(tmp_path, args, words):
    """Refused before any work: the tokenizer named is not there, and the budget is what the
    refusal names (a check made after loading the tokenizer would name the missing path)."""
    proc = cli("generate", "kv", *args, "--tokenizer", str(tmp_path / "absent"),
               "--out", str(tmp_path / "out"), "--quiet", timeout=60)  # fmt: skip
    assert_one_line(proc.returncode, proc.stderr, *words)
    assert "absent" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_the_documented_largest_config_fits_the_budget():
    SplitSpec("kv", 131072, modulus=8, n_base=256)
    SplitSpec("niah", 131072, modulus=8, n_base=256)
    SplitSpec("code", 131072, modulus=8, n_base=64)


NUMBERS = st.one_of(
    st.integers(-(10**12), 10**12).map(str),
    st.sampled_from(["", "x", "1.5", "1e9", "0x10", " 7", "-0", "nan", "\x00", "٣"]),
)


@FEW
@given(modulus=NUMBERS, n_base=NUMBERS, length=NUMBERS, seed=NUMBERS)
def test_generate_arguments_never_give_a_traceback(tmp_path_factory, modulus, n_base, length,
                                                   seed):  # fmt: skip
    out = tmp_path_factory.mktemp("gen") / "out"
    argv = ["generate", "kv", "--tokenizer", "./no-such-tokenizer.json", "--out", str(out),
            "--modulus", modulus, "--n-base", n_base, "--length", length, "--seed", seed,
            "--quiet"]  # fmt: skip
    code, _, err = run(argv)
    assert_one_line(code, err)
    assert not out.exists()


@FEW
@given(row=NUMBERS)
def test_inspect_rows_never_give_a_traceback(kv_split, row):
    code, out, err = run(["inspect", str(kv_split), "--row", row, "--no-color"])
    if code == 0:
        assert 0 <= int(row) < 128 and "balance" in out
    else:
        assert_one_line(code, err)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(sample=st.one_of(st.integers(-(10**6), 3).map(str), st.sampled_from(["x", "", "2.0"])))
def test_verify_samples_never_give_a_traceback(kv_split, sample):
    code, out, err = run(["verify", str(kv_split), "--sample", sample, "--quiet"])
    if code == 0:
        assert int(sample) >= 1 and "OK" in out
    else:
        assert_one_line(code, err)


@FEW
@given(args=st.lists(st.sampled_from(["--out", "--cache", "--report", "--quiet", "--previous",
                                      "--memory-limit", "--time-limit", "x", "-1", "0", "1e3",
                                      "/", ".", ""]), max_size=6))  # fmt: skip
def test_leaderboard_arguments_never_give_a_traceback(tmp_path_factory, args):
    empty = tmp_path_factory.mktemp("empty")
    for action in ("validate", "build"):
        code, _, err = run(["leaderboard", action, str(empty / "missing"), *args])
        assert_one_line(code, err)


PLAIN = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40),
              st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=20,
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(data=st.dictionaries(st.text(max_size=8), PLAIN, max_size=5))
def test_plain_yaml_round_trips(data):
    from phasebench.leaderboard.plain_yaml import load_plain

    assert load_plain(yaml.safe_dump(data)) == data


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=200))
def test_plain_yaml_answers_data_or_refusal(text):
    from phasebench.leaderboard.plain_yaml import PlainYamlError, load_plain

    try:
        load_plain(text)
    except PlainYamlError as exc:
        assert str(exc) and "\n" not in str(exc)


@pytest.mark.parametrize(
    "text",
    [
        "x: &a 1\ny: *a\n",
        "x: &a [1, 2]\n",
        "x: !!python/object/apply:os.system ['true']\n",
        "x: !!binary aGVsbG8=\n",
        "x: !custom abc\n",
        "a: 1\na: 2\n",
        "x: .nan\n",
        "x: " + "[" * 100 + "]" * 100 + "\n",
    ],
    ids=["alias", "anchor", "python tag", "binary tag", "custom tag", "duplicate key", "nan",
         "deep"],
)  # fmt: skip
def test_plain_yaml_refuses_anything_but_plain_data(text):
    from phasebench.leaderboard.plain_yaml import PlainYamlError, load_plain

    with pytest.raises(PlainYamlError):
        load_plain(text)


def test_plain_yaml_keeps_dates_as_text():
    from phasebench.leaderboard.plain_yaml import load_plain

    assert load_plain("date: 2026-12-01\n") == {"date": "2026-12-01"}


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(lines=st.lists(st.binary(max_size=60), max_size=8), gz=st.booleans())
def test_sample_reader_answers_records_or_one_refusal(tmp_path_factory, lines, gz):
    from phasebench.samples import LogError, ReadLimits, iter_samples

    folder = tmp_path_factory.mktemp("samples")
    raw = b"\n".join(lines)
    name = "samples_t_2026-01-01T00-00-00.000000.jsonl" + (".gz" if gz else "")
    path = folder / name
    path.write_bytes(gzip.compress(raw) if gz else raw)
    try:
        records = list(iter_samples(path, ReadLimits(max_lines=16)))
    except LogError as exc:
        assert exc.rule in {"json", "size", "path"} and "\n" not in exc.detail
    else:
        assert all(isinstance(r, dict) for r in records)


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.one_of(st.binary(max_size=200), PLAIN.map(lambda v: json.dumps(v).encode())))
def test_manifest_and_results_readers_answer_data_or_one_refusal(tmp_path_factory, data):
    from phasebench.build import read_manifest
    from phasebench.errors import PhasebenchError
    from phasebench.samples import read_results

    folder = tmp_path_factory.mktemp("readers")
    (folder / "manifest.json").write_bytes(data)
    (folder / "results_2026-01-01T00-00-00.json").write_bytes(data)
    for reader, path in (
        (read_manifest, folder),
        (read_results, folder / "results_2026-01-01T00-00-00.json"),
    ):
        try:
            reader(path)
        except PhasebenchError as exc:
            assert "\n" not in str(exc)


def _address_space(limit: int):
    def apply() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def test_a_spec_beyond_the_memory_it_may_use_is_refused_with_the_estimate(tmp_path):
    """4M tokens with 8 prompts is within the token budget but needs about 6.5 GiB (measured
    1.1-1.4 KiB per token): under a 4 GiB address-space cap it is refused at once, naming both
    figures, instead of dying in an allocation. The tokenizer named is not there: the estimate
    is checked before it is loaded, so the refusal names memory, not the missing path."""
    proc = cli("generate", "kv", "--length", "4194304", "--n-base", "4", "--modulus", "2",
               "--tokenizer", str(tmp_path / "absent"), "--out", str(tmp_path / "out"),
               "--quiet", timeout=60, preexec_fn=_address_space(4 << 30))  # fmt: skip
    assert_one_line(proc.returncode, proc.stderr, "GiB", "memory", "ulimit")
    assert "absent" not in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[1, 2]", ["neither"]),
        ("[" * 100_000 + "]" * 100_000, ["RecursionError"]),
        ('{"format": 1, "x": NaN}', ["NaN"]),
        ("\udcff", ["JSON"]),
    ],
    ids=["list", "deep", "nan", "garbage"],
)
def test_report_json_inputs_are_one_line(tmp_path, text, words):
    path = tmp_path / "report.json"
    path.write_text(text, errors="surrogateescape")
    assert_one_line(*run(["report", str(path)])[::2], *words)
    assert_one_line(*run(["report", str(tmp_path / "missing.json")])[::2], "does not exist")


def test_eval_arguments_of_the_wrong_type_are_one_line():
    """``max_length=abc`` and ``phase_modulus: "x"`` are refused with the field named (they
    reached ``int()`` and a traceback before)."""
    from phasebench.errors import EvalError, SpecError
    from phasebench.lmeval.data import split_specs
    from phasebench.lmeval.harness import model_max_length

    with pytest.raises(EvalError, match="max_length"):
        model_max_length({"pretrained": "x", "max_length": "abc"}, "hf")
    with pytest.raises(EvalError, match="max_length"):
        model_max_length({"model": "x", "max_length": "abc"}, "local-completions")
    with pytest.raises(SpecError, match="phase_modulus"):
        split_specs("kv", {"tokenizer": "deepseek-v4", "phase_modulus": "x"})
    assert split_specs("kv", {"tokenizer": "deepseek-v4", "phase_modulus": "4",
                              "max_seq_lengths": [256]})[0].modulus == 4  # fmt: skip
    assert model_max_length({"max_length": "4096"}, "hf") == 4096


def _lm_eval_output(folder: Path, submission_bytes: int = 0) -> Path:
    """A folder shaped like lm-eval's ``--output_path`` (what ``pack`` reads)."""
    run_dir = folder / "model"
    run_dir.mkdir(parents=True)
    (run_dir / "results_2026-01-01T00-00-00.000000.json").write_text('{"results": {}}\n')
    lines = [_line(_doc(phase=p, base_id=b), 1.0) for b in range(4) for p in range(8)]
    (run_dir / "samples_phasebench_kv_2026-01-01T00-00-00.000000.jsonl").write_bytes(
        b"".join(lines)
    )
    (folder / "submission.yaml").write_text("model: acme/m\nnotes: " + "x" * submission_bytes)
    return folder


def test_pack_never_overwrites_an_existing_results_file(tmp_path):
    source = _lm_eval_output(tmp_path / "out")
    packed = tmp_path / "acme__m" / "rev"
    packed.mkdir(parents=True)
    theirs = packed / "results_2026-01-01T00-00-00.000000.json"
    theirs.write_text("another run's results")
    (packed / "results_2025-01-01T00-00-00.000000.json").write_text("an earlier run")
    args = ["leaderboard", "pack", str(source), "--out", str(packed),
            "--submission", str(source / "submission.yaml")]  # fmt: skip
    assert_one_line(*run(args)[::2], theirs.name, "--overwrite")
    assert theirs.read_text() == "another run's results"
    assert sorted(p.name for p in packed.iterdir()) == [
        "results_2025-01-01T00-00-00.000000.json", theirs.name]  # fmt: skip
    code, out, err = run([*args, "--overwrite"])
    assert code == 0, err
    assert theirs.read_text() == '{"results": {}}\n'
    assert (packed / "results_2025-01-01T00-00-00.000000.json").read_text() == "an earlier run"
    assert len(out.splitlines()) == 3  # results, packed samples, submission.yaml


def _file_limit(limit: int):
    def apply():
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_pack_on_a_full_disk_leaves_no_partial_file(tmp_path):
    """A file-size limit stands in for a full disk: the results and samples files fit, the
    submission.yaml copied last does not; nothing of the pack may be left."""
    source = _lm_eval_output(tmp_path / "out", submission_bytes=64 * 1024)
    packed = tmp_path / "acme__m" / "rev"
    proc = cli("leaderboard", "pack", str(source), "--out", str(packed),
               "--submission", str(source / "submission.yaml"),
               preexec_fn=_file_limit(16 * 1024))  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # the folders made went too


@pytest.mark.slow
def test_report_on_a_full_disk_leaves_no_partial_file(tmp_path):
    """The JSON (4 KB) fits under the limit, the first PNG (about 48 KB) does not: neither the
    JSON nor any plot, nor the plots folder, may be left."""
    lines = [_line(_doc(id=f"kv-4096-b{b:05d}-p{p}", phase=p, base_id=b),
                   float((b + p) % 3 == 0)) for b in range(16) for p in range(8)]  # fmt: skip
    folder = _samples(tmp_path, lines)
    json_out, plots = tmp_path / "report.json", tmp_path / "plots"
    args = ["report", str(folder), "--n-boot", "20", "--n-perm", "20",
            "--json", str(json_out), "--plots", str(plots)]  # fmt: skip
    # matplotlib writes its font cache on first use (a fresh home, a fresh CI machine); under the
    # limit it warns about that cache on stderr, which is not what this test is about
    subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], check=True)
    proc = cli(*args, preexec_fn=_file_limit(16 * 1024))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert not json_out.exists() and not plots.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr
    assert json_out.is_file() and len(list(plots.iterdir())) == 2


def test_a_second_generate_into_the_same_out_is_refused_while_the_first_runs(
    tmp_path, deepseek, monkeypatch
):
    """Two runs into one --out: the one that starts while the other is writing is refused at
    once (it printed "complete" before, and one config silently replaced the other's)."""
    import phasebench.build as build
    from phasebench.errors import OutputError

    out, other = tmp_path / "split", SPEC.replace(seed=1)
    write_chunk, refusals = build._write_chunk, []

    def meanwhile(i):
        if not refusals:
            for overwrite in (False, True):
                with pytest.raises(OutputError, match="another phasebench process") as exc:
                    generate([other], out, overwrite=overwrite, progress=False, tokenizer=deepseek)
                refusals.append(str(exc.value))
        return write_chunk(i)

    monkeypatch.setattr(build, "_write_chunk", meanwhile)
    generate([SPEC], out, progress=False, tokenizer=deepseek)
    assert len(refusals) == 2
    spec = json.loads((out / SPEC.config_name / "spec.json").read_text())
    assert spec["seed"] == SPEC.seed
    assert sorted(p.name for p in out.iterdir()) == [SPEC.config_name]


KILLED_GENERATE = """
import os, signal, sys
import phasebench.build as build
from phasebench.cli import main
def killed(i):
    os.kill(os.getpid(), getattr(signal, sys.argv[1]))
build._write_chunk = killed
main(sys.argv[2:])
"""


@pytest.mark.slow  # 4.4 to 5.0 s in CI
@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGTERM"])
def test_staging_left_by_a_killed_generate_is_removed_by_the_next_run(
    tmp_path, signal_name, deepseek
):
    out = tmp_path / "split"
    generate([SPEC], out, progress=False, tokenizer=deepseek)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", KILLED_GENERATE, signal_name,
                           *_generate(out, "--overwrite")], env=env, timeout=300)  # fmt: skip
    assert proc.returncode < 0
    assert [p.name for p in out.iterdir() if p.name.startswith(".kv_256.staging-")]
    generate([SPEC], out, overwrite=True, progress=False, tokenizer=deepseek)
    assert sorted(p.name for p in out.iterdir()) == ["kv_256"]


KILLED_SITE = """
import os, signal, sys
import phasebench.leaderboard.render as render
from phasebench.cli import main
def killed(board, out, **kwargs):
    (out / "index.html").write_text("half a site")
    os.kill(os.getpid(), getattr(signal, sys.argv[1]))
render.render_site = killed
main(sys.argv[2:])
"""


@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGTERM"])
def test_staging_left_by_a_killed_site_build_is_removed_by_the_next_build(tmp_path, signal_name):
    subs, site = tmp_path / "subs", tmp_path / "site"
    (subs / "notamodel").mkdir(parents=True)  # one entry refused for its layout: a site is built
    build = ["leaderboard", "build", str(subs), "--out", str(site), "--quiet", "--no-reported"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", KILLED_SITE, signal_name, *build], env=env,
                          timeout=300)  # fmt: skip
    assert proc.returncode < 0
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".site.staging-")]
    code, _, err = run(build)
    assert code == 1 and "notamodel" in err, err  # the refused entry, and the site built
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site", "subs"]


def _listener(answer: bytes | None) -> tuple[socket.socket, int]:
    """A server on 127.0.0.1 that reads each request and sends ``answer`` (None: accepts the
    connection and never answers)."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def loop() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)
            if answer is not None:
                with contextlib.suppress(OSError):
                    conn.recv(1 << 16)
                    conn.sendall(answer)
                    conn.close()

    threading.Thread(target=loop, daemon=True).start()
    return server, server.getsockname()[1]


def _refused_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as server:
        return server.getsockname()[1]


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ("refused", ["Connection refused"]),
        (b"\x00\xffnot http at all\r\n\r\n", ["push to 'ORG/NAME' failed"]),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nContent-Type: application/json\r\n\r\n"
         b"not json!", ["push to 'ORG/NAME' failed"]),
        (b'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n[]',
         ["push to 'ORG/NAME' failed"]),
        (None, ["no answer within 0.5 s"]),
    ],
    ids=["refused", "not http", "not json", "wrong json", "never answers"],
)  # fmt: skip
def test_push_to_a_hub_that_fails_is_one_line(kv_split, tmp_path, monkeypatch, answer, words):
    """``publish --push`` against a refused port, an answer that is not the Hub's, and a Hub
    that accepts the connection and never answers (which waited forever: huggingface_hub's
    client sets no timeout): one line, exit 2, the folder built."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("HF_TOKEN", "hf_test")
    server = None
    if answer == "refused":
        port = _refused_port()
    else:
        server, port = _listener(answer)
    out = tmp_path / "repo"
    try:
        code, _, err = run(["publish", str(kv_split.parent), "--out", str(out), "--repo-id",
                            "ORG/NAME", "--push", "--endpoint", f"http://127.0.0.1:{port}",
                            "--timeout", "0.5"])  # fmt: skip
    finally:
        if server is not None:
            server.close()
    assert_one_line(code, err, *words)
    assert (out / "phasebench.json").is_file()


@pytest.mark.parametrize("doc", ["a string", ["a", "b"], [["id", "x"]], None, 7])
def test_pack_refuses_a_doc_that_is_not_an_object_in_one_line(tmp_path, doc):
    """A sample whose ``doc`` is a string (a list of pairs was silently turned into a mapping
    by ``dict()``) is refused with the file and the sample's number."""
    source = _samples(tmp_path / "lm-eval", [_line(_doc(), 1.0), _line(doc, 1.0)])
    (source / "results_2026-01-01T00-00-00.000000.json").write_text("{}")
    code, _, err = run(["leaderboard", "pack", str(source), "--out", str(tmp_path / "packed")])
    assert_one_line(code, err, "sample 2", "'doc' must be a JSON object")


def _paths(value, prefix=()) -> list[tuple]:
    """Every key path in a JSON document."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value[:3]):
            found += _paths(item, (*prefix, i))
    return found


@pytest.fixture(scope="module")
def report_data(tmp_path_factory) -> dict:
    """A real ``report --json`` of 4 base items x 8 phases."""
    folder = tmp_path_factory.mktemp("report")
    lines = [_line(_doc(id=f"kv-4096-b{b:05d}-p{r}", phase=r, base_id=b), float((b + r) % 3 > 0))
             for b in range(4) for r in range(8)]  # fmt: skip
    out = folder / "r.json"
    code, _, err = run(["report", str(_samples(folder, lines)), "--json", str(out), "--n-boot",
                        "20", "--n-perm", "20"])  # fmt: skip
    assert code == 0, err
    return json.loads(out.read_text())


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), value=PLAIN)
def test_any_report_json_gives_tables_or_one_line(report_data, tmp_path_factory, data, value):
    """``phasebench report FILE.json`` on a real report with any one value replaced by any
    JSON-ish value: its tables, or one line and exit 2."""
    path = data.draw(st.sampled_from(_paths(report_data)))
    file = tmp_path_factory.mktemp("report-json") / "report.json"
    file.write_text(json.dumps(replaced(report_data, path, value)))
    code, out, err = run(["report", str(file)])
    if code != 0:
        assert_one_line(code, err)
    else:
        assert "Traceback" not in err


DOC_FIELDS = ["id", "family", "length", "phase_modulus", "phase", "base_id", "config_length",
              "length_phase", "served_length"]  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(field=st.sampled_from(DOC_FIELDS), value=PLAIN, acc=st.one_of(PLAIN, st.just(1.0)))
def test_any_sample_field_gives_tables_or_one_line(tmp_path_factory, field, value, acc):
    """Samples of 2 base items x 8 phases, one doc field of one sample (or its ``acc``)
    replaced by any JSON-ish value: the report, or one line and exit 2."""
    folder = tmp_path_factory.mktemp("report-samples")
    lines = [_line(_doc(id=f"kv-4096-b{b:05d}-p{r}", phase=r, base_id=b), 1.0)
             for b in range(2) for r in range(8)]  # fmt: skip
    lines[3] = _line({**_doc(id="kv-4096-b00000-p3", phase=3, base_id=0), field: value}, acc)
    code, _, err = run(["report", str(_samples(folder, lines)), "--n-boot", "0", "--n-perm", "0"])
    if code != 0:
        assert_one_line(code, err)


def test_a_refused_output_folder_names_the_option_not_the_keyword(tmp_path):
    """Before, the command line was told to "pass overwrite=True (--overwrite)", the Python
    keyword first; a user of the command line is told ``--overwrite``."""
    source = _lm_eval_output(tmp_path / "out")
    packed = tmp_path / "acme__m" / "rev"
    args = ["leaderboard", "pack", str(source), "--out", str(packed)]
    assert run(args)[0] == 0
    code, _, err = run(args)
    assert_one_line(code, err, "--overwrite")
    assert "overwrite=True" not in err, err
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "mine.txt").write_text("not a split")
    code, _, err = run(["generate", "kv", "--length", "256", "--n-base", "16", "--out", str(taken)])
    assert_one_line(code, err, "--overwrite")
    assert "overwrite=True" not in err, err
