"""Built-in app specs (server atoms), one YAML file each under ``specs/``."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

import yaml
from pydantic import ValidationError

from envtrain.core.app import App
from envtrain.core.errors import SpecError


def builtin_app_names() -> list[str]:
    return sorted(p.name.removesuffix(".yaml") for p in resources.files(__package__).joinpath("specs").iterdir() if p.name.endswith(".yaml"))


@lru_cache(maxsize=None)  # specs are immutable package data; parse each once per process
def load_app(name: str) -> App:
    """A built-in app by name, or an app spec file by path."""
    path = Path(name) if name.endswith((".yaml", ".yml", ".json")) else None
    if path is None:
        if name not in builtin_app_names():
            raise SpecError(f"unknown app {name!r} (built-in apps: {', '.join(builtin_app_names())})")
        text = resources.files(__package__).joinpath("specs", f"{name}.yaml").read_text(encoding="utf-8")
        source = f"app {name}"
    else:
        text, source = path.read_text(encoding="utf-8"), str(path)
    return parse_app(yaml.safe_load(text), source=source)


def parse_app(data: object, *, source: str = "app") -> App:
    from envtrain.core.env import format_validation_error

    try:
        return App.model_validate(data)
    except ValidationError as exc:
        raise SpecError(f"{source}: {format_validation_error(exc)}") from None
