"""Empirical distributions stored compactly and sampled continuously.

A ``Distribution`` is a table of ascending (non-decreasing) ``values`` (milliseconds, or
counts) with ``weights`` that sum to 1. Its CDF is the piecewise-linear curve through the points
``(values[i], cumsum(weights)[i])``: ``weights[0]`` is a point mass at ``values[0]`` and
``weights[i]`` (i > 0) is spread uniformly over ``(values[i-1], values[i]]``, which is a point
mass at ``values[i]`` when the value is listed twice (the CDF jumps there). Consequences:

* the CDF equals the table's cumulative weight at every listed value, so a histogram such as
  the 2014 format's (keys, weights) keeps its CDF at the keys exactly;
* a quantile table fitted from data (``from_samples``) reproduces the data's CDF at every stored
  quantile, ties become point masses (a value listed twice), and draws between two stored values
  are continuous;
* multiplying every value by any positive finite factor (``scaled``) keeps the table valid:
  rounding is monotone, so ascending values stay ascending (two values that become equal turn
  a very steep ramp into a point mass);
* sampling is one inverse-CDF interpolation per draw, vectorised with numpy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mimesisbench.native import native_module

FloatArray = NDArray[np.float64]

#: default number of quantile points kept when a distribution is fitted from samples
DEFAULT_POINTS = 256


@dataclass(frozen=True, eq=False)
class _Arrays:
    """A distribution's table as arrays. Any two compare equal: pydantic compares models by their
    ``__dict__`` first, where this cache may sit, and it derives from fields compared anyway."""

    values: FloatArray
    cdf: FloatArray

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Arrays)

    __hash__ = None  # type: ignore[assignment]


#: samples from which the native radix sort is used (below it numpy's sort costs microseconds)
NATIVE_SORT_SAMPLES = 1 << 14


def sorted_floats(samples: NDArray[np.floating] | NDArray[np.integer] | list[float]) -> NDArray[np.float64]:
    """``samples`` as a sorted float64 copy (-0.0 as 0.0). With the native core, an LSD radix sort
    (``mimesisbench_native.sort_floats``): a fit sorts every type's millions of gaps, 0.13 s per
    8 M where numpy's sort takes 0.6 s. Either sort gives the same array."""
    data = np.array(samples, dtype=np.float64)  # a copy: sorted in place
    data += 0.0  # -0.0 + 0.0 is 0.0: the sorts order signed zeros differently
    native = native_module() if data.size >= NATIVE_SORT_SAMPLES else None
    if native is not None:
        native.sort_floats(data)
    else:
        data.sort()
    return data


class Distribution(BaseModel):
    """A compact empirical distribution with a piecewise-linear CDF."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    values: Annotated[list[float], Field(min_length=1)]
    weights: Annotated[list[float], Field(min_length=1)]

    @field_validator("values", "weights")
    @classmethod
    def _finite(cls, seq: list[float]) -> list[float]:
        arr = np.asarray(seq, dtype=np.float64)
        if not np.all(np.isfinite(arr)):
            raise ValueError("contains NaN or infinity")
        return seq

    @model_validator(mode="after")
    def _consistent(self) -> Distribution:
        values = np.asarray(self.values, dtype=np.float64)
        weights = np.asarray(self.weights, dtype=np.float64)
        if values.shape != weights.shape:
            raise ValueError(f"weights: values ({values.size}) and weights ({weights.size}) differ in length")
        if np.any(np.diff(values) < 0):
            raise ValueError("values: values must be ascending (a value listed twice is a point mass)")
        if np.any(weights < 0):
            raise ValueError("weights: weights must not be negative")
        total = float(weights.sum())
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"weights: weights sum to {total:.9g}, not 1")
        return self

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_samples(
        cls,
        samples: NDArray[np.floating] | NDArray[np.integer] | list[float],
        points: int = DEFAULT_POINTS,
        discrete: bool = False,
    ) -> Distribution:
        """Fit a quantile table from raw samples: ``points + 1`` evenly spaced quantile levels plus a
        few geometrically spaced ones in the upper tail; at most about ``2 * (points + 30)`` values.

        A stored value that several samples share (a tie) is listed twice, the first time with
        the CDF just below the tie, so the tie's mass is a point mass (the CDF jumps) rather than
        spread over the gap to the previous stored value. ``discrete``: samples of a discrete law
        (counts): when every distinct value is kept, each is a point mass, tied or not, so that
        draws give back the samples' values (spread over the gaps, the accesses of a type of three
        pollers listed 1,166, 1,513 and 1,538 times drew 4 % fewer in all).
        """
        data = sorted_floats(samples)
        if data.size == 0:
            raise ValueError("cannot fit a distribution to no samples")
        if not np.all(np.isfinite(data)):
            raise ValueError("samples contain NaN or infinity")
        n = data.size
        # data is sorted: the last index of every distinct value, without another sort
        ends = np.append(np.flatnonzero(data[1:] != data[:-1]), n - 1)
        if ends.size <= points + 1:
            # few distinct values: keep every one, exactly (ties are point masses)
            uniq = data[ends]
            cdf = (ends + 1) / n
        else:
            levels = np.linspace(0.0, 1.0, points + 1)
            if n > points:
                # heavy tails: quantiles at 1 - 1/points ... 1 - 1/n, geometrically spaced, so the
                # top segment does not spread its mass evenly up to the sample maximum (which
                # would inflate the mean of log-normal-like data)
                tail = 1.0 - np.geomspace(1.0 / points, 1.0 / n, int(np.log2(n / points)) + 2)
                levels = np.unique(np.concatenate([levels, tail]))
            # the inverted-CDF quantile of sorted data, by index
            q = data[np.clip(np.ceil(levels * n).astype(np.int64) - 1, 0, n - 1)]
            # empirical CDF at each stored value, so ties stay point masses
            uniq = np.unique(q)
            cdf = np.searchsorted(data, uniq, side="right") / n
        # ties are point masses; with ``discrete``, when every distinct value is kept, each one
        uniq, cdf = _keep_ties(data, uniq, cdf, every=discrete and ends.size <= points + 1)
        weights = np.diff(cdf, prepend=0.0)
        weights[-1] += 1.0 - weights.sum()
        return cls(values=uniq.tolist(), weights=weights.tolist())

    @classmethod
    def point(cls, value: float) -> Distribution:
        return cls(values=[float(value)], weights=[1.0])

    # ------------------------------------------------------------------ views
    def arrays(self) -> tuple[FloatArray, FloatArray]:
        """(values, cdf) as read-only float64 arrays; the CDF's last entry is exactly 1."""
        return self.table_arrays.values, self.table_arrays.cdf

    @cached_property
    def table_arrays(self) -> _Arrays:
        """``arrays()``, converted from the lists once (a 15,000-value list takes about 0.7 ms).
        Not a field: JSON ignores it, and the model is frozen, so it never goes stale."""
        values = np.asarray(self.values, dtype=np.float64)
        cdf = np.cumsum(np.asarray(self.weights, dtype=np.float64))
        cdf[-1] = 1.0
        values.flags.writeable = False
        cdf.flags.writeable = False
        return _Arrays(values, cdf)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Distribution:
        """A copy whose cached arrays follow the copy's values (``update`` may change them)."""
        copy = super().model_copy(update=update, deep=deep)
        copy.__dict__.pop("table_arrays", None)
        return copy

    def cdf(self, x: NDArray[np.floating] | float) -> FloatArray:
        """The right-continuous CDF (at a point mass: the value after the jump), vectorised."""
        values, cdf = self.arrays()
        xs = np.asarray(x, dtype=np.float64)
        # hi: how many stored values are <= x; the last of them holds the CDF after any jump
        hi = np.searchsorted(values, xs, side="right")
        lo = np.clip(hi - 1, 0, values.size - 1)
        up = np.clip(hi, 0, values.size - 1)
        width = values[up] - values[lo]
        frac = np.divide(xs - values[lo], width, out=np.zeros_like(xs), where=width > 0)
        out = cdf[lo] + (cdf[up] - cdf[lo]) * np.clip(frac, 0.0, 1.0)
        return np.where(hi == 0, 0.0, np.where(hi >= values.size, 1.0, out))

    def quantile(self, u: NDArray[np.floating] | float) -> FloatArray:
        """Inverse CDF: the value below which a share ``u`` of the mass lies (vectorised)."""
        values, cdf = self.arrays()
        us = np.asarray(u, dtype=np.float64)
        idx = np.searchsorted(cdf, us, side="left")
        idx = np.clip(idx, 0, values.size - 1)
        hi_v = values[idx]
        lo_v = values[np.maximum(idx - 1, 0)]
        lo_c = np.where(idx > 0, cdf[np.maximum(idx - 1, 0)], 0.0)
        hi_c = cdf[idx]
        width = hi_c - lo_c
        frac = np.divide(us - lo_c, width, out=np.ones_like(us), where=width > 0)
        frac = np.clip(frac, 0.0, 1.0)
        return np.where(idx == 0, values[0], lo_v + (hi_v - lo_v) * frac)

    def sample(self, rng: np.random.Generator, size: int) -> FloatArray:
        return self.quantile(rng.random(size))

    def mean(self) -> float:
        values = np.asarray(self.values, dtype=np.float64)
        weights = np.asarray(self.weights, dtype=np.float64)
        mids = np.empty_like(values)
        mids[0] = values[0]
        mids[1:] = (values[1:] + values[:-1]) / 2.0
        return float(np.dot(mids, weights))

    def scaled(self, factor: float) -> Distribution:
        """The same shape with every value multiplied by ``factor`` (positive, finite).

        Valid for any such factor: products of ascending values by a positive number are
        ascending (rounding is monotone; values that meet become a point mass). Raises
        ``ValueError`` when a product overflows to infinity."""
        if not (math.isfinite(factor) and factor > 0):
            raise ValueError(f"scale factor must be positive and finite, got {factor!r}")
        with np.errstate(over="ignore", under="ignore"):
            values = np.asarray(self.values, dtype=np.float64) * float(factor)
        if not np.all(np.isfinite(values)):
            raise ValueError(f"scaling by {factor:g} overflows: the largest value becomes infinite")
        return Distribution(values=values.tolist(), weights=list(self.weights))


def _keep_ties(
    data: FloatArray, uniq: FloatArray, cdf: FloatArray, every: bool = False
) -> tuple[FloatArray, FloatArray]:
    """List every tied stored value ``v`` but the first twice: ``(v, F(v-))`` then ``(v, F(v))``,
    a point mass of the tie's share at ``v``; with ``every``, each stored value, tied or not."""
    below = np.searchsorted(data, uniq, side="left") / data.size
    tied = (np.searchsorted(data, uniq, side="right") - np.searchsorted(data, uniq, side="left")) > 1
    tied |= every
    insert = tied.copy()
    insert[0] = False  # the first value is a point mass anyway
    if not insert.any():
        return uniq, cdf
    values = np.insert(uniq, np.flatnonzero(insert), uniq[insert])
    cdfs = np.insert(cdf, np.flatnonzero(insert), below[insert])
    return values, cdfs
