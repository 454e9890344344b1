"""The serving settings a server reports about itself, read over HTTP from a loopback server
(llama.cpp's ``/props`` shape; one without it reports nothing), and a declaration checked
against them."""

from __future__ import annotations

from phasebench.lmeval.served_settings import (
    differing_settings,
    reported_settings,
    server_root,
    settings_mismatch,
)


def test_what_the_server_reports_is_read_and_checked():
    from support.cache_fault_server import cache_fault_server

    props = {"default_generation_settings": {"n_ctx": 4096, "params": {}}, "total_slots": 2}
    with cache_fault_server({}, len, fault=None, props=props) as (url, _):
        assert server_root(url) == url.removesuffix("/v1/completions")
        found = reported_settings(url)
    assert found == {"context_tokens": 4096, "parallel_requests": 2,
                     "source": {"context_tokens": "/props n_ctx",
                                "parallel_requests": "/props total_slots"}}  # fmt: skip
    with cache_fault_server({}, len, fault=None) as (url, _):
        assert reported_settings(url) == {}  # no /props, no max_model_len: nothing reported
    assert settings_mismatch({"context_tokens": 4096, "ubatch_tokens": 512}, found) is None
    assert settings_mismatch({"parallel_requests": 1}, found) == (
        "parallel_requests: declared 1 requests, the server reports 2 requests (/props total_slots)"
    )
    hostile = {"context_tokens": "<b>" * 40, "source": {"context_tokens": "\x1b[31m"}}
    line = settings_mismatch({"context_tokens": 4096}, hostile)
    assert line is not None and "\x1b" not in line and len(line) < 200
    assert differing_settings({"prefix_cache": True, "kv_block_tokens": 16},
                              {"prefix_cache": True, "draft_tokens": 4}) == [
        "kv_block_tokens", "draft_tokens"]  # fmt: skip
