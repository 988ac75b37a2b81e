"""Timing helpers the benchmarks share: medians in milliseconds, and side-by-side pairs."""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable


def p50(fn: Callable[[], Any], n: int, *, warmup: int = 1) -> float:
    """Median wall time of ``fn`` in milliseconds over ``n`` calls, after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def interleaved(a: Callable[[], Any], b: Callable[[], Any], n: int) -> tuple[float, float]:
    """p50 milliseconds of ``a`` and ``b`` run alternately, so that both see the same machine load."""
    a(), b()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(n):
        for fn, out in ((a, times[0]), (b, times[1])):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return statistics.median(times[0]) * 1000, statistics.median(times[1]) * 1000
