"""A stand-in for the Hugging Face Hub on 127.0.0.1: answers the requests the real
``huggingface_hub`` client sends for a dataset (create repo, branch, tree, revision info,
resolve, preupload, LFS batch and upload, commit) and records them, so the push and the Hub
loading paths run their real code without a network."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``, by relative path."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


class FakeHub:
    """Records the requests huggingface_hub sends and answers like the Hub's API."""

    SHA = "b" * 40  # the one commit the stand-in serves

    def __init__(self, existing: list[str] | None = None, served: Path | None = None):
        self.served = tree(served) if served is not None else {}
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


def serve(monkeypatch, server: FakeHub) -> FakeHub:
    """Point huggingface_hub at ``server`` for one test (restored by ``monkeypatch``)."""
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
