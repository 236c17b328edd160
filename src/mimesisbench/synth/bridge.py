"""Walks of a command chain that end as the trace's streams end (Markov bridges).

A type's accesses are counted first (its popularity law) and labelled by walking its command
chain for that many steps (``synth.chains``). A plain walk then ends wherever its count stops it,
in the state the chain happens to be in, and a real stream does not: a reader's stream ends
with the ``open`` that its last ``getfileinfo`` led to (on a real mixed trace 40 % of a reader
type's streams end with ``open`` and 13 % with ``getfileinfo``; plain walks of the same lengths
end 31 % and 35 %), so plain walks lose about one ``open`` in twenty.

The fix is the chain conditioned on its end. Each possible last state ``l`` gets a weight
``e[l]`` and a walk of n accesses from its first state is drawn with probability proportional
to the product of its transitions times ``e[last state]``: a Markov bridge, sampled forward
with the chain's transitions reweighted by ``beta_r = P^r e`` (r: the steps left after the one
drawn; Doob's h-transform). The first state keeps its law (``first``), every transition keeps
its support, and the weights are solved (``end_weights``, a fixed point by iterative
proportional fitting) so that the walks' last states follow the trace's law (``last``) over the
lengths being walked. Written here because no maintained library samples end-conditioned
Markov chains vectorised over millions of walks of different lengths.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]
#: steps before a walk's end that the bridge reweights: past them ``beta_r`` has converged (the
#: chains of real types mix in a few steps), so a plain step is drawn
BRIDGE_STEPS = 64
#: iterations of the proportional fitting of ``end_weights`` (it converges in a few dozen)
FIT_ITERATIONS = 200
FIT_TOLERANCE = 1e-9


def _powers(p: F64, steps: int) -> F64:
    """``P^1 .. P^steps`` as an array of shape (steps, k, k)."""
    k = p.shape[0]
    out = np.empty((steps, k, k), dtype=np.float64)
    cur = np.eye(k)
    for m in range(steps):
        cur = cur @ p
        out[m] = cur
    return out


def _last_law(first: F64, powers: F64, e: F64, weight: F64) -> F64:
    """The law of the last state of bridged walks whose transitions number m + 1 with weight
    ``weight[m]`` (``powers[m] = P^(m+1)``): from first state ``a``, last state ``l`` has
    probability ``P^m(a, l) e[l] / (P^m e)(a)``; an ``a`` that reaches no weighted end walks
    plainly (the sampler falls back to the chain's own rows there)."""
    beta = powers @ e  # (steps, k): P^m e
    reach = beta > 0
    scale = np.where(reach, first[None, :] / np.where(reach, beta, 1.0), 0.0)
    bridged = np.einsum("ma,mal->ml", scale, powers) * e[None, :]
    plain = np.einsum("ma,mal->ml", np.where(reach, 0.0, first[None, :]), powers)
    law: F64 = ((bridged + plain) * weight[:, None]).sum(axis=0)
    return law / max(float(weight.sum()), 1e-300)


def end_weights(p: F64, first: F64, last: F64, lengths: NDArray[np.int64]) -> F64 | None:
    """The end weights ``e`` under which walks of ``lengths`` accesses (those of two or more
    count) from ``first`` end with the law ``last``; None when no walk has two accesses."""
    hops = np.asarray(lengths, dtype=np.int64) - 1
    hops = hops[hops >= 1]
    if hops.size == 0:
        return None
    steps = int(min(hops.max(), BRIDGE_STEPS))
    weight = np.bincount(np.minimum(hops, steps) - 1, minlength=steps).astype(np.float64)
    powers = _powers(p, steps)
    target = np.asarray(last, dtype=np.float64)
    e = np.ones(p.shape[0], dtype=np.float64)
    for _ in range(FIT_ITERATIONS):
        law = _last_law(first, powers, e, weight)
        ratio = np.where(law > 0, target / np.where(law > 0, law, 1.0), 0.0)
        new = e * ratio
        top = float(new.max())
        if top <= 0:
            return None  # the trace's ends are unreachable by these walks: walk plainly
        new /= top
        done = float(np.abs(new - e).max()) < FIT_TOLERANCE
        e = new
        if done:
            break
    return e


def bridge_rows(p: F64, e: F64, steps: int) -> F64:
    """Row CDFs of the reweighted transitions, laid end to end for one ``searchsorted``: row
    ``r * k + a`` (``r`` steps left after the state drawn, ``a`` the state before it) holds the
    CDF of ``P[a, b] * (P^r e)[b]`` normalised, shifted by its row index; a row whose weights are
    all zero is the chain's own row."""
    k = p.shape[0]
    beta = np.empty((steps, k), dtype=np.float64)
    cur = np.asarray(e, dtype=np.float64)
    for r in range(steps):
        beta[r] = cur
        cur = p @ cur
    w = p[None, :, :] * beta[:, None, :]  # (steps, a, b)
    total = w.sum(axis=2, keepdims=True)
    w = np.where(total > 0, w / np.where(total > 0, total, 1.0), p[None, :, :])
    cdf = np.cumsum(w, axis=2)
    cdf[:, :, -1] = 1.0
    shifted: F64 = (cdf.reshape(steps * k, k) + np.arange(steps * k, dtype=np.float64)[:, None]).ravel()
    return shifted
