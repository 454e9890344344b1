"""Tokenizer loading, fingerprints and exact assembly.

Two ways to know where a token sits:

* the **exact path** encodes the whole final prompt with the tokenizer exactly as lm-eval's ``hf``
  backend does (``tokenizer.encode(text)`` with its default special tokens) and reads positions
  from the offset mapping; ``verify`` and the tests use it;
* the **fast path** encodes each piece of a prompt once (``count``) and adds the counts. It is only
  valid when the tokenizer cannot merge tokens across the seams between pieces, so every family
  checks its seams with :func:`check_seams` on real pieces before it relies on the sums, and the
  tests prove the two paths equal on real tokenizers.

A piece is counted **as it encodes inside a prompt**. Most tokenizers encode a piece the same on
its own, so ``count`` encodes pieces alone. SentencePiece-BPE models (Llama 2, Mistral) mark the
start of a text with a prefix space (``tkd241`` alone is ``▁t k d ...``, after ``key.`` and a
newline it is ``tk d ...``), so on them a piece is encoded after a fixed left context, a newline
(a byte token that merges with nothing), and the context's own tokens are dropped
(:func:`piece_context` decides per tokenizer, on probe pieces). The piece that opens a prompt is
counted at the text's start (``at_start=True``). The seam check runs the same way, so whatever
the context cannot make exact is still refused.

Every loaded tokenizer also carries a behaviour record (:mod:`phasebench.tokenizer_behaviour`):
what it encodes, under which class and versions, and whether its ``tokenizer.json`` agrees.

A package by job: ``_names`` (how a tokenizer is named in what phasebench writes, and found
again: :func:`portable_name`, :func:`local_path`, :func:`builtin_path`), ``_arguments`` (the
model arguments as lm-eval's ``hf`` backend reads them), ``_hub`` (whether a Hub id can be had:
:func:`check_reachable`), ``_tokenizer`` (:class:`PhaseTokenizer`, the exact and the fast path,
the fingerprint), ``_loading`` (:func:`load_tokenizer`) and ``_seams`` (:func:`check_seams`,
:class:`FillerTable`). Import from ``phasebench.tokenization``.
"""

from phasebench.tokenization._arguments import gguf_problem as gguf_problem
from phasebench.tokenization._arguments import truthy
from phasebench.tokenization._hub import HUB_CONNECT_TIMEOUT as HUB_CONNECT_TIMEOUT
from phasebench.tokenization._hub import check_reachable
from phasebench.tokenization._loading import _load_cached as _load_cached
from phasebench.tokenization._loading import load_tokenizer
from phasebench.tokenization._names import (
    BUILTIN_ALIASES,
    builtin_path,
    portable_name,
)
from phasebench.tokenization._names import LOCAL_PREFIX as LOCAL_PREFIX
from phasebench.tokenization._names import PACKAGE_PREFIX as PACKAGE_PREFIX
from phasebench.tokenization._names import local_path as local_path
from phasebench.tokenization._seams import FillerTable, build_filler_table, check_seams
from phasebench.tokenization._tokenizer import NEWLINE_CONTEXT as NEWLINE_CONTEXT
from phasebench.tokenization._tokenizer import (
    PhaseTokenizer,
    piece_context,
    tokenizer_fingerprint,
)
from phasebench.tokenizer_behaviour import TokenizerLoadWarning, encoding_difference

__all__ = [
    "BUILTIN_ALIASES",
    "FillerTable",
    "PhaseTokenizer",
    "TokenizerLoadWarning",
    "build_filler_table",
    "builtin_path",
    "check_reachable",
    "check_seams",
    "encoding_difference",
    "load_tokenizer",
    "piece_context",
    "portable_name",
    "tokenizer_fingerprint",
    "truthy",
]
