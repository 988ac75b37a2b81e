"""Environment collections as Hugging Face datasets (composed, scaled or synthesized folders alike)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envtrain.core.env import Environment

SUFFIXES = (".json", ".yaml", ".yml")


def environment_rows(folder: str | Path) -> list[dict[str, Any]]:
    """One row per environment document under ``folder``: the canonical document plus columns to filter on."""
    rows = []
    for path in sorted(p for p in Path(folder).rglob("*") if p.suffix in SUFFIXES and p.is_file()):
        env = Environment.load(path)
        rows.append({
            "id": env.id,
            "source": env.provenance.source,
            "parent": env.provenance.parent or "",
            "depth": env.provenance.depth,
            "apps": [a.name for a in env.apps],
            "request": env.request,
            "num_tools": sum(len(a.tools) for a in env.apps),
            "num_assertions": len(env.verifier.positive) + len(env.verifier.negative),
            "reference_length": len(env.reference_solution),
            "document": env.to_json(),  # Environment.parse(json.loads(row["document"])) gives it back, same id
        })
    return rows


def export_environments(folder: str | Path, out: str | Path) -> Any:
    """Save the environments under ``folder`` as a dataset at ``out`` (``datasets.load_from_disk(out)``)."""
    from datasets import Dataset

    data = Dataset.from_list(environment_rows(folder))
    data.save_to_disk(str(out))
    return data
