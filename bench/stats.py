"""Latency figures the benches print, computed one way."""

from __future__ import annotations


def percentile(samples: list[float], q: float) -> float:
    """The ``q`` quantile of ``samples`` (0 <= q <= 1), nearest rank: a value that was measured."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]
