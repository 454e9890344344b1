"""``phasebench publish``: repository folders, data cards, loading back, and the push.

Everything runs on local folders with the real ``datasets`` and ``huggingface_hub`` code paths;
the push talks to a small Hub stand-in on 127.0.0.1 that answers the requests the real client
sends (create repo, branch, tree, preupload, LFS batch and upload, commit) and records them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

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

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

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


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _copy(repo: Path, dest: Path) -> Path:
    for rel, data in _tree(repo).items():
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
    assert data["language"] == ["en"]
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


def test_checked_in_example_card_is_current(repo):
    """``data_cards/example/README.md`` is this fixture's card; a change to the template, the
    prose or the generators shows up here (rebuild it as docs/hub.md says)."""
    from phasebench.resources import resource_dir

    example = resource_dir("data_cards") / "example" / "README.md"
    assert example.read_text() == (repo / "README.md").read_text()


def test_build_is_deterministic(generated, repo, tmp_path):
    again = tmp_path / "again"
    hub.build_repo([generated], again, repo_id="ORG/NAME")
    assert _tree(again) == _tree(repo)


def test_refuses_non_empty_out_and_overwrites_atomically(generated, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["publish", str(generated), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "not empty" in err and "--overwrite" in err and "Traceback" not in err
    assert _tree(out) == {"keep.txt": b"mine"}
    assert main(["publish", str(generated), "--out", str(out), "--overwrite"]) == 0
    assert "keep.txt" not in _tree(out) and hub.repo_problems(out) == []
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temp folder left behind


def test_bad_input_is_one_line_and_writes_nothing(generated, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["publish", str(generated), "--out", str(out), "--default-config", "nope"]) == 2
    assert "'--default-config' must be one of" in capsys.readouterr().err
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
    with pytest.raises(PhasebenchError, match="do not hash to the manifest"):
        hub.load_split(copy, name, cache_dir=str(tmp_path / "c2"))


def test_published_configs_read_like_generated_ones(repo, generated):
    from phasebench.verify import verify_config

    folders = hub.config_folders(repo, family="kv", lengths=[512])
    assert [f.relative_to(repo).as_posix() for f in folders] == ["kv_512_deepseek_v4"]
    assert len(hub.config_folders(repo)) == len(hub.read_index(repo)["configs"])
    # what reads generated output (the lm-eval tasks' dataset_path) reads the repository as is
    assert build.config_folders(repo) == sorted(repo / n for n in _originals(generated))
    assert hub.config_folders(generated, family="kv", lengths=[256]) == [generated / "kv_256"]
    assert len(hub.config_folders(generated, lengths=[256])) == 3  # kv, niah and code
    original = _originals(generated)["kv_512_deepseek_v4"]
    assert list(iter_rows(folders[0])) == list(iter_rows(original))
    report = verify_config(folders[0], progress=False)  # re-encodes every published prompt
    assert report.ok and report.checked == report.rows == 128, report.lines()
    with pytest.raises(PhasebenchError, match=r"holds no config kv at lengths \[12345\]"):
        hub.config_folders(repo, family="kv", lengths=[12345])
    with pytest.raises(PhasebenchError, match="neither a folder nor a Hub dataset id"):
        hub.config_folders("./no/such/folder")


# -- validation before a push -----------------------------------------------------------------


@pytest.mark.parametrize(
    "tamper, problem",
    [
        ("card_number", "differs from the card rendered"),
        ("card_config", "declares configs"),
        ("swap_files", "stored content hash does not match"),
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
    elif tamper == "swap_files":
        (bad / first["files"][0]["path"]).write_bytes(
            (bad / second["files"][0]["path"]).read_bytes()
        )
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
    assert paths == sorted(_tree(repo)) and not any(p.startswith(".") for p in paths)


# -- the push, against a local Hub stand-in ---------------------------------------------------


class FakeHub:
    """Records the requests huggingface_hub sends and answers like the Hub's API."""

    SHA = "b" * 40  # the one commit the stand-in serves

    def __init__(self, existing: list[str] | None = None, served: Path | None = None):
        self.served = _tree(served) if served is not None else {}
        self.requests: list[dict] = []
        self.lfs: dict[str, bytes] = {}
        self.commits: list[dict] = []
        self.existing = existing or []
        handler = type("Handler", (_Handler,), {"hub": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def committed_files(self) -> dict[str, bytes]:
        (commit,) = self.commits
        files = {}
        for item in commit["lines"]:
            if item["key"] == "file":
                files[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
            elif item["key"] == "lfsFile":
                files[item["value"]["path"]] = self.lfs[item["value"]["oid"]]
        return files


class _Handler(BaseHTTPRequestHandler):
    hub: FakeHub

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _reply(self, status: int, payload) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PUT(self):
        self._handle("PUT")

    def do_HEAD(self):
        self._handle("HEAD")

    def _file(self, method: str, data: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        self.send_header("X-Repo-Commit", FakeHub.SHA)
        self.end_headers()
        if method == "GET":
            self.wfile.write(data)

    def _handle(self, method: str) -> None:
        url = urlparse(self.path)
        path, query = unquote(url.path), parse_qs(url.query)
        body = self._body()
        hub = self.hub
        if path == "/api/agent-harnesses":  # the client's own registry lookup, not our business
            return self._reply(404, {"error": "not here"})
        hub.requests.append(
            {
                "method": method,
                "path": path,
                "query": query,
                "auth": self.headers.get("Authorization"),
                "size": len(body),
            }
        )
        if path == "/api/validate-yaml":
            content = json.loads(body)["content"]
            ok = content.startswith("---\n") and json.loads(body)["repoType"] == "dataset"
            return self._reply(200 if ok else 400, {"errors": [] if ok else [{"message": "bad"}]})
        if path == "/api/repos/create":
            payload = json.loads(body)
            hub.requests[-1]["json"] = payload
            repo = f"{payload['organization']}/{payload['name']}"
            return self._reply(200, {"url": f"{hub.url}/datasets/{repo}"})
        if m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/branch/(.+)", path):
            return self._reply(200, {})
        if m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/tree/([^/]+)/?", path):
            entries = [
                {"type": "file", "path": p, "size": 1, "oid": "0" * 40} for p in hub.existing
            ] + [
                {
                    "type": "file",
                    "path": p,
                    "size": len(data),
                    "oid": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(),
                }
                for p, data in hub.served.items()
            ]
            return self._reply(200, entries)
        if m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/revision/(.+)", path):
            siblings = [{"rfilename": p} for p in hub.served]
            return self._reply(200, {"id": m.group(1), "sha": FakeHub.SHA, "siblings": siblings})
        if m := re.fullmatch(r"/datasets/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path):
            if m.group(3) not in hub.served:
                return self._reply(404, {"error": "Entry not found"})
            return self._file(method, hub.served[m.group(3)])
        if m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/preupload/(.+)", path):
            files = json.loads(body)["files"]
            return self._reply(
                200,
                {
                    "files": [
                        {
                            "path": f["path"],
                            "uploadMode": "lfs" if f["path"].endswith(".parquet") else "regular",
                            "shouldIgnore": False,
                        }
                        for f in files
                    ]
                },
            )
        if m := re.fullmatch(r"/datasets/([^/]+/[^/]+)\.git/info/lfs/objects/batch", path):
            objects = json.loads(body)["objects"]
            return self._reply(
                200,
                {
                    "transfer": "basic",
                    "objects": [
                        {
                            "oid": o["oid"],
                            "size": o["size"],
                            "actions": {"upload": {"href": f"{hub.url}/lfs-upload/{o['oid']}"}},
                        }
                        for o in objects
                    ],
                },
            )
        if m := re.fullmatch(r"/lfs-upload/([0-9a-f]{64})", path):
            if hashlib.sha256(body).hexdigest() != m.group(1):
                return self._reply(400, {"error": "sha256 mismatch"})
            hub.lfs[m.group(1)] = body
            return self._reply(200, {})
        if m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/commit/(.+)", path):
            lines = [json.loads(line) for line in body.decode().splitlines() if line]
            hub.commits.append(
                {"repo": m.group(1), "revision": m.group(2), "query": query, "lines": lines}
            )
            pr = "create_pr" in query
            return self._reply(
                200,
                {
                    "commitUrl": f"{hub.url}/datasets/{m.group(1)}/commit/{'a' * 40}",
                    "commitOid": "a" * 40,
                    "pullRequestUrl": f"{hub.url}/datasets/{m.group(1)}/discussions/1"
                    if pr
                    else None,
                },
            )
        return self._reply(404, {"error": f"no route {method} {path}"})


def _serve(monkeypatch, server: FakeHub) -> FakeHub:
    from huggingface_hub import constants

    # The stand-in speaks the Hub API and the LFS protocol, not Xet storage. Requests may go
    # out (to 127.0.0.1 only: the default endpoint is the stand-in too) even if the calling
    # environment sets HF_HUB_OFFLINE=1.
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", server.url)
    monkeypatch.setattr(
        constants,
        "HUGGINGFACE_CO_URL_TEMPLATE",
        server.url + "/{repo_id}/resolve/{revision}/{filename}",
    )
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    return server


#: Files of an earlier publish on the stand-in: a config this publish lacks, and a shard that a
#: config still published no longer has.
STALE = [
    "kv_1024_deepseek_v4/manifest.json",
    "kv_1024_deepseek_v4/data-00000-of-00001.parquet",
    "kv_256_deepseek_v4/data-00001-of-00002.parquet",
]


@pytest.fixture
def hub_server(monkeypatch):
    server = _serve(
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

    server = _serve(monkeypatch, FakeHub(served=repo))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    try:
        (folder,) = hub.config_folders(
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
    assert hub_server.committed_files() == _tree(repo)
    lines = hub_server.commits[0]["lines"]
    lfs_paths = {x["value"]["path"] for x in lines if x["key"] == "lfsFile"}
    assert lfs_paths == {p for p in _tree(repo) if p.endswith(".parquet")}
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
    assert hub_server.committed_files() == _tree(out)
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
