"""Effects of the factors of a two-level experiment (2^k r or 2^(k-p) r) and of a one-factor sweep.

The model is Jain's (The Art of Computer Systems Performance Analysis, ch. 17-19), the one
Saif's thesis uses: in +-1 coding, y = q0 + sum_i q_i x_i + e over the estimable effects (main
effects and interactions, one per alias class). statsmodels fits it by least squares, which gives
the q_i of the sign table when the design is balanced and stays right when a run is missing.
Reported per effect: q_i, the mean change from -1 to +1 (2 q_i), its 95% confidence interval
(Student t with the residual degrees of freedom, 2^(k-p)(r-1) when every run has r
replications) and the share of the variation it explains (its sum of squares over the total).

Without replications there is no error to estimate: Lenth's method (Technometrics, 1989) takes
the margin of error from the effects themselves (most are noise when few factors matter). It is
written here because statsmodels does not offer it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mimesisbench.analysis.designs import AliasClass, AliasStructure, alias_structure
from mimesisbench.errors import ConfigError

#: the confidence level of every interval
LEVEL = 0.95


@dataclass(frozen=True)
class Effect:
    """One estimable effect: ``q`` the model coefficient, ``effect`` the mean change from -1 to +1
    (2 q), ``ci95`` the interval of ``effect``, ``variation_explained`` its share of the total
    variation; ``aliases`` the words estimated with it (signed)."""

    name: str
    q: float
    effect: float
    ci95: tuple[float, float]
    variation_explained: float
    aliases: tuple[str, ...] = ()

    @property
    def significant(self) -> bool:
        lo, hi = self.ci95
        return lo > 0 or hi < 0

    def to_json(self) -> dict[str, Any]:
        return {"q": self.q, "effect": self.effect, "ci95": list(self.ci95),
                "variation_explained": self.variation_explained, "significant": self.significant,
                "aliases": list(self.aliases)}


@dataclass(frozen=True)
class TwoLevelAnalysis:
    """The analysis of a two-level experiment (``to_json`` gives the keys other tools read)."""

    response: str
    factors: dict[str, str]  # letter -> factor name
    coding: dict[str, dict[str, str]]  # factor -> {"-1": level, "+1": level}
    runs: int  # distinct design points
    observations: int
    replications: int | None  # None: not the same at every design point
    mean_response: float
    mean_ci95: tuple[float, float] | None
    dof: int
    method: str  # "t" (replications) or "lenth"
    effects: tuple[Effect, ...]
    error_variation: float | None
    structure: AliasStructure
    lenth: dict[str, float] | None = None
    warnings: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        aliases = {c.name: c.described() for c in self.structure.classes if len(c.words) > 1}
        return {
            "kind": "two-level",
            "response": self.response,
            "factors": self.factors,
            "coding": self.coding,
            "runs": self.runs,
            "observations": self.observations,
            "replications": self.replications,
            "mean_response": self.mean_response,
            "mean_ci95": list(self.mean_ci95) if self.mean_ci95 else None,
            "dof": self.dof,
            "method": self.method,
            "lenth": self.lenth,
            "effects": {e.name: e.to_json() for e in self.effects},
            "error_variation": self.error_variation,
            "defining_relation": list(self.structure.defining_relation),
            "resolution": self.structure.resolution,
            "aliases": aliases,
            "warnings": list(self.warnings),
        }


def _column(levels: NDArray[np.int8], word: str, letters: str) -> NDArray[np.float64]:
    return np.prod(levels[:, [letters.index(x) for x in word]], axis=1).astype(np.float64)


def analyze_two_level(
    levels: NDArray[np.integer],
    y: NDArray[np.float64],
    factors: dict[str, str],
    response: str,
    coding: dict[str, dict[str, str]] | None = None,
) -> TwoLevelAnalysis:
    """Effects of a two-level experiment: ``levels`` (observations x factors, -1/+1, columns in
    the order of ``factors``: letter -> name), ``y`` the response of each observation."""
    import statsmodels.api as sm

    x = np.asarray(levels, dtype=np.int8)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] != y.size or x.shape[1] != len(factors):
        raise ConfigError("the runs table's factor columns and responses do not line up")
    if not np.all(np.abs(x) == 1):
        raise ConfigError("a two-level analysis needs every factor at -1 or +1")
    if not np.all(np.isfinite(y)):
        raise ConfigError(f"response {response!r}: a run has no finite value")
    letters = "".join(factors)
    points, counts = np.unique(x, axis=0, return_counts=True)
    structure = alias_structure(points, tuple(letters))
    classes = structure.classes
    if len(classes) != points.shape[0] - 1:
        raise ConfigError(
            f"not a regular two-level design: {points.shape[0]} distinct runs of {len(factors)} factors cannot "
            f"estimate their {len(classes)} alias classes apart (a full 2^k or a 2^(k-p) fraction, every run present)")
    design = np.column_stack([np.ones(y.size)] + [_column(x, c.name, letters) for c in classes])
    fit = sm.OLS(y, design).fit()
    n = y.size
    sst = float(np.sum((y - y.mean()) ** 2))
    dof = int(round(fit.df_resid))
    q = np.asarray(fit.params, dtype=np.float64)
    shares = _variation_shares(design, y, fit, sst)
    warnings: list[str] = []
    lenth: dict[str, float] | None = None
    if dof > 0:
        bounds = np.asarray(fit.conf_int(alpha=1 - LEVEL), dtype=np.float64)
        intervals = [(2 * float(lo), 2 * float(hi)) for lo, hi in bounds[1:]]
        mean_ci: tuple[float, float] | None = (float(bounds[0, 0]), float(bounds[0, 1]))
        method = "t"
        error_share: float | None = float(fit.ssr) / sst if sst > 0 else 0.0
    else:
        margin, pse, d = lenth_margin(2 * q[1:])
        intervals = [(2 * float(v) - margin, 2 * float(v) + margin) for v in q[1:]]
        mean_ci, method, error_share = None, "lenth", None
        lenth = {"pse": pse, "dof": d, "margin": margin}
        warnings.append("no replications: intervals by Lenth's method (a pseudo standard error from the effects "
                        f"themselves, {d:.1f} degrees of freedom); replicate runs for intervals from the error")
    effects = tuple(
        Effect(name=c.name, q=float(q[i + 1]), effect=2 * float(q[i + 1]), ci95=intervals[i],
               variation_explained=float(shares[i]), aliases=tuple(c.described()))
        for i, c in enumerate(classes)
    )
    warnings.extend(_aliasing_warnings(effects, classes, unreplicated=method != "t"))
    same = bool(np.all(counts == counts[0]))
    return TwoLevelAnalysis(
        response=response, factors=dict(factors), coding=coding or {}, runs=int(points.shape[0]), observations=n,
        replications=int(counts[0]) if same else None, mean_response=float(q[0]), mean_ci95=mean_ci, dof=dof,
        method=method, effects=effects, error_variation=error_share, structure=structure, lenth=lenth,
        warnings=tuple(warnings),
    )


def _variation_shares(design: NDArray[np.float64], y: NDArray[np.float64], fit: Any, sst: float) -> NDArray[np.float64]:
    """Each effect's sum of squares over the total: n q_i^2 when the design is balanced (its
    columns orthogonal), else what leaving the effect out adds to the residual sum of squares."""
    import statsmodels.api as sm

    if sst <= 0:
        return np.zeros(design.shape[1] - 1)
    gram = design.T @ design
    q = np.asarray(fit.params, dtype=np.float64)
    if np.allclose(gram, np.diag(np.diag(gram))):
        return np.diag(gram)[1:] * q[1:] ** 2 / sst
    out = np.empty(design.shape[1] - 1)
    for i in range(1, design.shape[1]):
        reduced = sm.OLS(y, np.delete(design, i, axis=1)).fit()
        out[i - 1] = (float(reduced.ssr) - float(fit.ssr)) / sst
    return out


def lenth_margin(effects: NDArray[np.float64]) -> tuple[float, float, float]:
    """Lenth's margin of error of unreplicated effects: (margin, PSE, degrees of freedom).
    s0 = 1.5 median |c|; PSE = 1.5 median of the |c| below 2.5 s0; margin = t(0.975, m/3) PSE."""
    from scipy import stats

    c = np.abs(np.asarray(effects, dtype=np.float64))
    if c.size < 2:
        raise ConfigError("Lenth's method needs at least two effects (an unreplicated design of two or more runs more)")
    s0 = 1.5 * float(np.median(c))
    small = c[c < 2.5 * s0]
    pse = 1.5 * float(np.median(small)) if small.size else 0.0
    d = c.size / 3.0
    return float(stats.t.ppf(0.5 + LEVEL / 2, d)) * pse, pse, d


#: without replications (Lenth's weak test on few runs) an effect explaining this share of the
#: variation gets the aliasing warning even when its interval holds 0
LARGE_SHARE = 0.10


def _aliasing_warnings(effects: tuple[Effect, ...], classes: tuple[AliasClass, ...], *,
                       unreplicated: bool = False) -> list[str]:
    """A significant effect (or, unreplicated, a large one) whose alias class holds two words of
    at most two factors (a main effect and a two-factor interaction, or two such interactions)
    cannot be told apart: say which fold-over would separate them."""
    out = []
    for e, c in zip(effects, classes):
        low = [w for w in c.words if len(w) <= 2]
        large = unreplicated and e.variation_explained >= LARGE_SHARE
        if not (e.significant or large) or len(low) < 2 or not any(len(w) == 2 for w in low):
            continue
        if any(len(w) == 1 for w in low):
            fold = "fold the design over (every factor's signs reversed: twice the runs) to free main effects " \
                   "from two-factor interactions"
        else:
            pair = [w for w in low if len(w) == 2]
            only = sorted(set(pair[0]) - set(pair[1]))
            fold = f"fold the design over on factor {only[0]} (its signs reversed: twice the runs) to separate " \
                   f"{' and '.join(pair[:2])}" if only else "add runs to separate them"
        what = "is significant" if e.significant else f"explains {e.variation_explained:.0%} of the variation"
        out.append(f"effect {e.name} {what} but is aliased with {', '.join(w for w in c.words[1:] if len(w) <= 2)}: "
                   f"which one acts cannot be told from these runs; {fold}")
    return out


@dataclass(frozen=True)
class LevelMean:
    level: str
    n: int
    mean: float
    ci95: tuple[float, float] | None

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "mean": self.mean, "ci95": list(self.ci95) if self.ci95 else None}


@dataclass(frozen=True)
class SweepAnalysis:
    """A one-factor sweep: the response's mean and 95% t interval at each level."""

    response: str
    factor: str
    levels: tuple[LevelMean, ...]
    mean_response: float
    dof: int

    def to_json(self) -> dict[str, Any]:
        return {"kind": "sweep", "response": self.response, "factor": self.factor, "mean_response": self.mean_response,
                "dof": self.dof, "levels": {m.level: m.to_json() for m in self.levels}, "effects": {}, "aliases": {}}


def analyze_sweep(levels: list[str], y: NDArray[np.floating], factor: str, response: str,
                  order_of: list[str] | None = None) -> SweepAnalysis:
    """Per level (in ``order_of``'s order, as the experiment lists them, else the order first met)
    its runs, mean and 95% interval (t with n-1 degrees of freedom; None for a level run once)."""
    from scipy import stats

    y = np.asarray(y, dtype=np.float64)
    if len(levels) != y.size:
        raise ConfigError("the runs table's factor column and responses do not line up")
    if not np.all(np.isfinite(y)):
        raise ConfigError(f"response {response!r}: a run has no finite value")
    met = list(dict.fromkeys(levels))
    order = [v for v in order_of or [] if v in met] + [v for v in met if v not in (order_of or [])]
    means = []
    dof = 0
    for level in order:
        values = y[[i for i, v in enumerate(levels) if v == level]]
        mean = float(values.mean())
        ci = None
        if values.size > 1:
            half = float(stats.t.ppf(0.5 + LEVEL / 2, values.size - 1)) * float(values.std(ddof=1)) / np.sqrt(values.size)
            ci = (mean - half, mean + half)
            dof += values.size - 1
        means.append(LevelMean(level=level, n=int(values.size), mean=mean, ci95=ci))
    return SweepAnalysis(response=response, factor=factor, levels=tuple(means), mean_response=float(y.mean()), dof=dof)
