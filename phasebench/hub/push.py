"""Uploading a validated dataset repository folder as one commit."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from phasebench._version import __version__
from phasebench.build import MANIFEST
from phasebench.errors import HubError
from phasebench.hub.naming import check_repo_id
from phasebench.hub.repo import folder_files, validate_repo

if TYPE_CHECKING:
    from huggingface_hub import CommitInfo


def commit_operations(repo_dir: Path | str, remote_files: Sequence[str] = ()) -> list:
    """The operations of the one commit that makes the repository equal the folder: an add
    for every file, and a delete for each remote file of an earlier publish's config folder
    (a top-level folder holding ``manifest.json``) that the folder no longer holds. Other
    remote files (``.gitattributes``, anything a maintainer added) are left alone."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    repo = Path(repo_dir)
    local = folder_files(repo)
    ours = {p.split("/")[0] for p in remote_files if p.count("/") == 1 and p.endswith(MANIFEST)}
    stale = sorted(p for p in set(remote_files) - set(local) if p.split("/")[0] in ours)
    return [CommitOperationDelete(path_in_repo=p) for p in stale] + [
        CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(repo / p)) for p in local
    ]


#: Seconds a push waits to connect to the Hub, and for each answer (one read of a response).
PUSH_TIMEOUT = 60.0


def _transport_errors() -> tuple[type[BaseException], ...]:
    """What the Hub client's HTTP library raises when a connection is refused, times out or
    gets an answer that is not HTTP: ``httpx2`` (huggingface_hub 2), ``httpx`` (1.x);
    ``requests`` (0.x) raises ``OSError`` subclasses."""
    from huggingface_hub.errors import HfHubHTTPError

    errors: list[type[BaseException]] = [HfHubHTTPError, OSError]
    for name in ("httpx2", "httpx"):
        try:
            errors.append(importlib.import_module(name).HTTPError)
        except ImportError:
            continue
    return tuple(errors)


@contextmanager
def _timeout(seconds: float) -> Iterator[None]:
    """huggingface_hub's shared HTTP client with a timeout for connecting and for each read
    (its default client has none: a Hub that accepts and never answers would hang the push),
    restored afterwards."""
    from huggingface_hub import get_session

    session = get_session()
    previous = getattr(session, "timeout", None)
    session.timeout = seconds
    try:
        yield
    finally:
        session.timeout = previous


def push_repo(
    repo_dir: Path | str,
    repo_id: str,
    *,
    revision: str | None = None,
    create_pr: bool = False,
    private: bool | None = None,
    token: str | None = None,
    endpoint: str | None = None,
    commit_message: str | None = None,
    timeout: float = PUSH_TIMEOUT,
) -> CommitInfo:
    """Validate ``repo_dir`` and upload it to the dataset repository ``repo_id`` as one commit.

    With ``revision`` the commit goes to that branch (created from the default branch if
    missing); with ``create_pr`` it opens a pull request (against ``revision`` if given).
    The token is ``token`` or the usual ``HF_TOKEN`` / ``hf auth login`` one. Every request
    waits at most ``timeout`` seconds to connect and for each read of its answer; a refused
    connection, a timeout or an answer that is not the Hub's is one :class:`HubError` line.
    """
    from huggingface_hub import HfApi, get_token
    from huggingface_hub.errors import RevisionNotFoundError

    check_repo_id(repo_id)
    index = validate_repo(repo_dir, deep=True)
    if index["repo_id"] != repo_id:
        raise HubError(
            f"{str(repo_dir)!r} was built for repository {index['repo_id']!r}, not {repo_id!r}; "
            f"rebuild it for that repository id, overwriting it"
        )
    token = token or get_token()
    if not token:
        raise HubError("no Hugging Face token: run `hf auth login` or set HF_TOKEN before pushing")
    api = HfApi(endpoint=endpoint, token=token)
    message = commit_message or (
        f"phasebench {__version__}: {len(index['configs'])} configs "
        f"({', '.join(c['name'] for c in index['configs'])})"
    )
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise HubError(f"'timeout' must be a positive number of seconds (got {timeout!r})")
    try:
        with _timeout(float(timeout)):
            api.create_repo(repo_id, repo_type="dataset", exist_ok=True, private=private)
            if revision and not create_pr:
                api.create_branch(repo_id, branch=revision, repo_type="dataset", exist_ok=True)
            try:
                remote = api.list_repo_files(repo_id, repo_type="dataset", revision=revision)
            except RevisionNotFoundError:
                remote = []
            return api.create_commit(
                repo_id,
                commit_operations(repo_dir, remote),
                commit_message=message,
                repo_type="dataset",
                revision=revision,
                create_pr=create_pr,
            )
    except (*_transport_errors(), ValueError, KeyError, TypeError) as exc:
        # ValueError (JSON that does not parse), KeyError and TypeError: an answer of
        # another shape than the Hub's
        text = " ".join(str(exc).split())
        first = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
        hint = "check the endpoint, the repository id, your token's write access and the revision"
        if "timeout" in type(exc).__name__.lower() or "timed out" in text.lower():
            hint = f"no answer within {timeout:g} s"
        raise HubError(f"push to {repo_id!r} failed ({first[:200]}); {hint}") from None
