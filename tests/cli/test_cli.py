"""The command line as a user meets it: one clear line and exit 2 on bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from phasebench.cli import main


def run_cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run(
        [sys.executable, "-m", "phasebench", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
    )


@pytest.mark.slow
def test_generate_verify_inspect_round_trip(tmp_path):
    out = tmp_path / "splits"
    r = run_cli(
        "generate",
        "kv",
        "--length",
        "512",
        "--length",
        "1024",
        "--n-base",
        "16",
        "--seed",
        "1",
        "--out",
        str(out),
        "--quiet",
    )
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["kv_1024", "kv_512"]
    r = run_cli("verify", str(out), "--sample", "20", "--quiet")
    assert r.returncode == 0 and "kv_512: OK" in r.stdout and "kv_1024: OK" in r.stdout
    r = run_cli("inspect", str(out / "kv_512"), "--no-color")
    assert r.returncode == 0
    assert "<<" in r.stdout and "anchor_mean" in r.stdout and "Question:" in r.stdout


@pytest.mark.parametrize(
    "args,message",
    [
        (["--tokenizer", "./no-such-tokenizer.json"], "does not exist"),
        (["--tokenizer", "phasebench-test/no-such-model"], "not in the Hugging Face cache"),
        (["--length", "80"], "too short"),
        (["--modulus", "1"], "'modulus' must be >= 2"),
        (["--n-base", "0"], "argument --n-base: must be >= 1 (got 0)"),
        (["--seed", "-1"], "argument --seed: must be >= 0 (got -1)"),
        (["--n-base", "12"], "multiple of 'modulus'"),
        (["--shard", "3/2"], "--shard"),
        (["--haystack", "prose.txt"], "niah family only"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(args, message, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["generate", "kv", "--length", "1024", "--n-base", "16", "--out", str(out), "--quiet"]
    # later flags win in argparse, so the bad value overrides the good default above
    code = main(argv + args)
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err
    assert not out.exists()


def test_non_empty_output_folder_is_refused(tmp_path, capsys):
    (tmp_path / "mine.txt").write_text("x")
    code = main(["generate", "kv", "--length", "1024", "--n-base", "16", "--out", str(tmp_path)])
    assert code == 2 and "--overwrite" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["mine.txt"]


def test_verify_exit_1_on_violation(tmp_path, capsys):
    out = tmp_path / "s"
    assert (
        main(["generate", "kv", "--length", "512", "--n-base", "16", "--out", str(out), "--quiet"])
        == 0
    )
    manifest = out / "kv_512" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"rows": 128', '"rows": 129'))
    assert main(["verify", str(out), "--quiet"]) == 1
    assert "FAILED" in capsys.readouterr().out


# -- the command line as a program ------------------------------------------------------------


def _subcommands(parser):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield name, sub
                for inner, nested in _subcommands(sub):
                    yield f"{name} {inner}", nested


def test_building_the_parser_imports_no_heavy_library():
    """``--help`` and ``tasks-dir`` must answer at once (tasks-dir runs inside every documented
    lm_eval command): building the parser imports neither torch nor transformers nor scipy."""
    code = (
        "import sys\n"
        "from phasebench.cli import build_parser\n"
        "build_parser()\n"
        "heavy = ('torch', 'transformers', 'scipy', 'lm_eval', 'datasets', 'pyarrow', 'pandas')\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def test_help_and_tasks_dir_work_without_torch():
    code = (
        "import sys\n"
        "sys.modules['torch'] = None  # any import of torch now fails\n"
        "from phasebench.cli import main\n"
        "assert main(['--help']) == 0\n"
        "assert main(['generate', '--help']) == 0\n"
        "assert main(['reference', 'train', '--help']) == 0\n"
        "assert main(['tasks-dir']) == 0\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "phasebench_kv.yaml" not in done.stdout and done.stdout.strip().endswith("tasks")


def test_every_option_has_help_and_shows_its_default():
    from phasebench.cli import build_parser

    missing = []
    for name, sub in _subcommands(build_parser()):
        for action in sub._actions:
            if action.dest in ("help", "version") or not action.option_strings:
                continue
            if not action.help:
                missing.append(f"{name} {action.option_strings[0]}")
    assert not missing, missing
    generate = build_parser()._subparsers._group_actions[0].choices["generate"]
    help_text = " ".join(generate.format_help().split())
    assert "(default: 8)" in help_text and "(default: deepseek-v4)" in help_text


def test_shared_options_are_defined_once():
    """Every command's parser has the one help formatter without naming it, and ``--quiet``
    is written only in ``phasebench/cli/_args.py``."""
    from pathlib import Path

    from phasebench.cli import HelpFormatter, build_parser

    for name, sub in _subcommands(build_parser()):
        assert sub.formatter_class is HelpFormatter, name
    cli = Path(__file__).resolve().parents[2] / "phasebench" / "cli"
    for path in sorted(cli.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if path.name != "__init__.py":
            assert "formatter_class" not in text, path.name
        if path.name != "_args.py":
            assert '"--quiet"' not in text, path.name


def test_the_version_is_written_in_one_place():
    """pyproject.toml reads it from phasebench/_version.py; CITATION.cff names none (the
    software's version is the installed package's, ``phasebench --version``)."""
    import tomllib
    from pathlib import Path

    from phasebench import __version__

    root = Path(__file__).resolve().parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "phasebench._version.__version__"
    assert __version__ and "\nversion:" not in (root / "CITATION.cff").read_text()


def test_version_and_python_dash_m(capsys):
    from phasebench import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"phasebench {__version__}"
    done = run_cli("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"phasebench {__version__}"


def test_a_usage_error_is_one_line(capsys):
    assert main(["generate", "kv", "--out", "x", "--num-proc", "zero"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--num-proc" in err and "Traceback" not in err


def _parsers(parser):
    """``parser`` and every sub-command's parser under it."""
    import argparse

    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from _parsers(sub)


def test_help_shows_each_default_once_and_none_for_required_or_unset_options():
    """Before, ``--license`` read ``(default: apache-2.0) (default: None)`` and the required
    ``--dataset ORG/NAME`` ``(default: None)``."""
    import re

    from phasebench.cli import build_parser

    seen = 0
    for parser in _parsers(build_parser()):
        text = parser.format_help()
        assert "(default: None)" not in text and "(default: False)" not in text, parser.prog
        # one option's help runs from its flag to the next flag at the same indent
        for entry in re.split(r"\n  (?=-)", text):
            assert entry.count("(default") <= 1, (parser.prog, entry)
        seen += 1
    assert seen > 20


def test_tasks_dir_inspect_prints_the_hf_model_arguments(capsys):
    """``phasebench tasks-dir --inspect`` names the file ``inspect eval --model-config`` takes:
    the pass-through chat template the Inspect tasks declare, and greedy decoding."""
    import yaml

    assert main(["tasks-dir", "--inspect"]) == 0
    path = Path(capsys.readouterr().out.strip())
    config = yaml.safe_load(path.read_text())
    assert config == {"chat_template": "{{ messages[0]['content'] }}", "do_sample": False}
    source = (path.parent / "_tasks.py").read_text()
    assert f'PROMPT_AS_IS = "{config["chat_template"]}"' in source
