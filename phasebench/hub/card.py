"""The data card: YAML front matter through ``datasets``/``huggingface_hub``'s own serializers,
prose from ``data_cards/card.md.j2``, every figure from the index, the manifests and the parquet
schemas (so the same inputs always give the same bytes)."""

from __future__ import annotations

import functools
import json
from typing import Any

import jinja2
import pyarrow as pa

from phasebench.build import MANIFEST
from phasebench.hub.naming import SPLIT, TEMPLATE
from phasebench.resources import resource_dir
from phasebench.specs import FAMILIES

_SIZE_CATEGORIES = (
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
    (1_000_000_000, "100M<n<1B"),
    (10_000_000_000, "1B<n<10B"),
    (100_000_000_000, "10B<n<100B"),
    (1_000_000_000_000, "100B<n<1T"),
)
_TASK_CATEGORIES = {"kv": "question-answering", "niah": "question-answering"}
_FAMILY_TAGS = {
    "kv": "key-value-retrieval",
    "niah": "needle-in-a-haystack",
    "code": "code-completion",
}


def size_category(rows: int) -> str:
    """The Hub's ``size_categories`` bucket for ``rows`` examples."""
    for bound, label in _SIZE_CATEGORIES:
        if rows < bound:
            return label
    return "n>1T"


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("data_cards"))),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def card_metadata(index: dict, schemas: dict[str, pa.Schema]) -> Any:
    """The card's front matter as a ``huggingface_hub.DatasetCardData``: configs with their
    data files (written through ``datasets``' own serializers), license, language, task
    categories, size, tags, pretty name and the row features of every config."""
    import datasets
    from datasets.info import DatasetInfo, DatasetInfosDict
    from datasets.splits import SplitDict, SplitInfo
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCardData

    configs = index["configs"]
    families = sorted({c["family"] for c in configs}, key=FAMILIES.index)
    total = sum(c["rows"] for c in configs)
    data = DatasetCardData(
        pretty_name=index["pretty_name"],
        license=index["license"],
        language=["en"],
        task_categories=sorted({_TASK_CATEGORIES.get(f, "text-generation") for f in families}),
        size_categories=[size_category(total)],
        tags=[
            "long-context",
            "phase-sensitivity",
            "kv-cache-compression",
            "positional-bias",
            "phasebench",
        ]
        + [_FAMILY_TAGS[f] for f in families],
    )
    MetadataConfigs(
        {
            c["name"]: {
                "data_files": [{"split": SPLIT, "path": [f["path"] for f in c["files"]]}],
                **({"default": True} if c["name"] == index["default_config"] else {}),
            }
            for c in configs
        }
    ).to_dataset_card_data(data)
    infos = {}
    for c in configs:
        splits = SplitDict()
        splits.add(SplitInfo(name=SPLIT, num_bytes=c["num_bytes"], num_examples=c["rows"]))
        infos[c["name"]] = DatasetInfo(
            features=datasets.Features.from_arrow_schema(schemas[c["name"]].remove_metadata()),
            splits=splits,
            download_size=sum(f["size"] for f in c["files"]),
            dataset_size=c["num_bytes"],
        )
    DatasetInfosDict(infos).to_dataset_card_data(data)
    return data


def family_facts(info: dict, max_items: int = 12) -> list[tuple[str, str]]:
    """The family's manifest summary as short (label, text) lines for the card: scalars, and
    small lists or mappings of scalars; anything bigger is left to the manifest."""

    def scalar(value: Any) -> bool:
        return isinstance(value, str | int | float | bool) or value is None

    def small(values: Any) -> bool:
        return len(values) <= max_items and all(map(scalar, values))

    facts = []
    for key in sorted(info):
        value = info[key]
        if scalar(value):
            text = json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value)
        elif isinstance(value, dict) and small(list(value.values())):
            text = ", ".join(f"{k}: {v}" for k, v in sorted(value.items())) or "none"
        elif isinstance(value, list) and small(value):
            text = ", ".join(map(str, value)) or "none"
        else:
            text = f"see `{MANIFEST}`"
        facts.append((key.replace("_", " "), text))
    return facts


def render_card(index: dict, manifests: dict[str, dict], schemas: dict[str, pa.Schema]) -> str:
    """The whole ``README.md``: front matter from :func:`card_metadata`, body from the
    template, every figure taken from ``index``, ``manifests`` and the parquet ``schemas``."""
    data = card_metadata(index, schemas)
    configs = []
    for c in index["configs"]:
        manifest = manifests[c["name"]]
        balance = manifest["balance"]
        configs.append(
            {
                **c,
                "manifest": manifest,
                "spec": manifest["spec"],
                "tokenizer": manifest["tokenizer"],
                "phases": [
                    {"phase": r, "count": n, "mean": m, "std": s}
                    for r, (n, m, s) in enumerate(
                        zip(
                            balance["count_per_phase"],
                            balance["anchor_mean_per_phase"],
                            balance["anchor_std_per_phase"],
                            strict=True,
                        )
                    )
                ],
                "balance": balance,
                "family_facts": family_facts(manifest.get("family") or {}),
            }
        )
    families = [f for f in FAMILIES if any(c["family"] == f for c in configs)]
    text = (
        _environment()
        .get_template(TEMPLATE)
        .render(
            front_matter=data.to_yaml().strip(),
            index=index,
            configs=configs,
            families=families,
            repo_id=index["repo_id"] or "ORG/NAME",
            default_config=index["default_config"],
            split=SPLIT,
        )
    )
    return text.rstrip("\n") + "\n"
