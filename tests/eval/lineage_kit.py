"""Hand-made lineages for eval tests: example environments as depth-0 originals, and "scaled"
descendants that add an access note to the docs (a stand-in for envtrain scale, whose request and
verifier stay byte-identical), written to ORIGINALS/ and scaled/d1, d2, ..."""

from __future__ import annotations

from pathlib import Path

from envtrain.core.env import Environment

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["helpdesk_escalation.yaml", "invoicing_payment_run.yaml", "crm_pipeline_hygiene.yaml"]


def write_lineages(folder: Path, *, depth: int) -> tuple[list[str], dict[str, list[str]]]:
    """Returns (original ids, root id -> [descendant ids by depth 1..depth])."""
    originals, scaled = [], {}
    (folder / "originals").mkdir(parents=True, exist_ok=True)
    for name in EXAMPLES:
        env = Environment.load(ROOT / "examples" / name)
        env.save(folder / "originals" / f"{env.id}.json")
        originals.append(env.id)
        chain, parent = [], env
        for d in range(1, depth + 1):
            data = parent.model_dump(mode="json", exclude={"id"})
            data["docs"] = list(data["docs"]) + [{"title": f"access note {d}", "body": f"records moved in round {d}"}]
            data["provenance"] = {**data["provenance"], "source": "scale", "parent": parent.id, "depth": d}
            child = Environment.parse(data)
            (folder / "scaled" / f"d{d}").mkdir(parents=True, exist_ok=True)
            child.save(folder / "scaled" / f"d{d}" / f"{child.id}.json")
            chain.append(child.id)
            parent = child
        scaled[env.id] = chain
    return originals, scaled
