"""Two-level designs of experiments: full 2^k, fractional 2^(k-p) by generators (``D=AB E=AC``) or by
resolution, their alias structure, and a randomized run order.

The designs themselves come from pyDOE (``ff2n``, ``fracfact``, ``fracfact_by_res``). The alias
structure is computed here from the design's columns: pyDOE's ``fracfact_aliasing`` names factors
a..t by position and reads a column and its negation (``D = -AB``) as unrelated, and neither
gives the defining relation, which the resolution and the fold-over advice need. Factors are
lettered A, B, C, ... by position, skipping I (the identity of the defining relation ``I = ABD``).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mimesisbench.errors import ConfigError

#: factor letters by position (I is the identity column, as in ``I = ABD``)
LETTERS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"
#: factors a two-level design and its alias structure take at most (every word of up to this many
#: letters is enumerated: 4,095 at 12)
MAX_FACTORS = 12


def letter_names(k: int) -> tuple[str, ...]:
    """The letters of ``k`` factors, A, B, C, ... (no I)."""
    if not 1 <= k <= MAX_FACTORS:
        raise ConfigError(f"a two-level design takes 1 to {MAX_FACTORS} factors, not {k}")
    return tuple(LETTERS[:k])


@dataclass(frozen=True)
class AliasClass:
    """Words (interactions, as letter strings) whose columns are equal or opposite in a design:
    one effect is estimated for all of them. ``words[0]`` names it (the lowest order, then the
    first in letter order); ``signs[i]`` is -1 where ``words[i]``'s column is the opposite."""

    words: tuple[str, ...]
    signs: tuple[int, ...]

    @property
    def name(self) -> str:
        return self.words[0]

    def described(self) -> list[str]:
        """The other words, signed as seen from ``name`` (``["-BD", "CE"]``)."""
        lead = self.signs[0]
        return [("-" if s * lead < 0 else "") + w for w, s in zip(self.words[1:], self.signs[1:])]


@dataclass(frozen=True)
class AliasStructure:
    """The defining relation (words equal to +I or -I, signed) and the alias classes of the
    estimable effects, in the order of their names' order then letters."""

    defining_relation: tuple[str, ...]
    classes: tuple[AliasClass, ...]

    @property
    def resolution(self) -> int | None:
        """The length of the shortest word of the defining relation (None: a full factorial)."""
        lengths = [len(w.lstrip("-")) for w in self.defining_relation]
        return min(lengths) if lengths else None


def _order_key(word: str) -> tuple[int, str]:
    return len(word), word


def alias_structure(levels: NDArray[np.integer], letters: tuple[str, ...]) -> AliasStructure:
    """The alias structure of the distinct runs ``levels`` (runs x factors, -1/+1): every word of
    the factors' letters grouped by its column over the runs, a column and its opposite together."""
    runs, k = levels.shape
    if k != len(letters) or k > MAX_FACTORS:
        raise ConfigError(f"a two-level design takes 1 to {MAX_FACTORS} factors, not {k}")
    signs_of = levels.astype(np.int8)
    groups: dict[bytes, list[tuple[str, int]]] = {}
    relation: list[str] = []
    for order in range(1, k + 1):
        for combo in itertools.combinations(range(k), order):
            column = np.prod(signs_of[:, list(combo)], axis=1, dtype=np.int8)
            word = "".join(letters[i] for i in combo)
            if np.all(column == column[0]):  # constant: in the defining relation
                relation.append(word if column[0] > 0 else "-" + word)
                continue
            sign = 1 if column[0] > 0 else -1
            groups.setdefault((column * sign).tobytes(), []).append((word, sign))
    classes = []
    for members in groups.values():
        members.sort(key=lambda m: _order_key(m[0]))
        classes.append(AliasClass(words=tuple(w for w, _ in members), signs=tuple(s for _, s in members)))
    classes.sort(key=lambda c: _order_key(c.name))
    del runs
    return AliasStructure(defining_relation=tuple(relation), classes=tuple(classes))


_GENERATOR = re.compile(r"^([A-Z])=(-?)([A-Z]+)$")


@dataclass(frozen=True)
class TwoLevelDesign:
    """A two-level design: ``matrix`` (runs x factors, -1/+1) of the named ``factors`` (lettered
    A, B, ... by position) and the generators that made it ("" for a full factorial)."""

    factors: tuple[str, ...]
    matrix: NDArray[np.int8]
    generators: tuple[str, ...]

    @property
    def letters(self) -> tuple[str, ...]:
        return letter_names(len(self.factors))

    @property
    def runs(self) -> int:
        return int(self.matrix.shape[0])

    def aliases(self) -> AliasStructure:
        return alias_structure(self.matrix, self.letters)

    def run_order(self, replications: int, seed: int) -> NDArray[np.int64]:
        """``random_run_order`` of this design's rows."""
        return random_run_order(self.runs, replications, seed)


def random_run_order(points: int, replications: int, seed: int) -> NDArray[np.int64]:
    """Each (design point, replication) once, in a random order drawn from ``seed``: rows of
    ``[point, replication]``. Randomized so that a drift of the system over time (a warming
    cache, a filling disk) does not pass for a factor's effect."""
    if replications < 1:
        raise ConfigError(f"replications: must be at least 1, got {replications}")
    pairs = np.array([(row, rep) for rep in range(replications) for row in range(points)], dtype=np.int64)
    return pairs[np.random.default_rng(seed).permutation(len(pairs))]


def _checked_factors(factors: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    names = tuple(f.strip() for f in factors)
    if any(not n for n in names):
        raise ConfigError("factors: a factor has no name")
    if len(set(names)) != len(names):
        raise ConfigError(f"factors: named twice: {sorted({n for n in names if names.count(n) > 1})}")
    letter_names(len(names))
    return names


def full_factorial(factors: list[str] | tuple[str, ...]) -> TwoLevelDesign:
    """Every combination of the factors' two levels: 2^k runs."""
    import pydoe

    names = _checked_factors(factors)
    return TwoLevelDesign(factors=names, matrix=pydoe.ff2n(len(names)).astype(np.int8), generators=())


def fractional_factorial(factors: list[str] | tuple[str, ...], generators: str) -> TwoLevelDesign:
    """A 2^(k-p) fraction: the factors that no generator defines form a full factorial, each of
    the p others is the product of some of them (``"D=AB E=AC F=BC"``, letters by position;
    ``D=-AB`` for the other half-fraction)."""
    import pydoe

    names = _checked_factors(factors)
    letters = letter_names(len(names))
    defined: dict[str, str] = {}
    for part in generators.replace(",", " ").split():
        m = _GENERATOR.match(part.strip().upper())
        if m is None:
            raise ConfigError(f"generators: {part!r} is not of the form D=AB (a factor's letter = a product of letters)")
        target, minus, word = m.groups()
        if target not in letters:
            raise ConfigError(f"generators: {part!r} defines {target}, not one of the factors' letters {''.join(letters)}")
        if target in defined:
            raise ConfigError(f"generators: {target} is defined twice")
        defined[target] = minus + word
    if not defined:
        raise ConfigError("generators: none given (a full factorial needs none)")
    base = [x for x in letters if x not in defined]
    for target, word in defined.items():
        bare = word.lstrip("-")
        if len(set(bare)) != len(bare) or len(bare) < 2 or any(x not in base for x in bare):
            raise ConfigError(f"generators: {target}={word} must multiply two or more distinct factors that no "
                              f"generator defines (here {''.join(base)})")
    gen = " ".join(x.lower() if x in base else defined[x].lower() for x in letters)
    matrix = pydoe.fracfact(gen).astype(np.int8)
    design = TwoLevelDesign(factors=names, matrix=matrix, generators=tuple(f"{t}={w}" for t, w in defined.items()))
    if len({row.tobytes() for row in matrix}) != matrix.shape[0]:
        raise ConfigError(f"generators: {generators!r} repeat runs")
    return design


def design_by_resolution(factors: list[str] | tuple[str, ...], resolution: int) -> TwoLevelDesign:
    """The smallest 2^(k-p) fraction of at least ``resolution`` that pyDOE's ``fracfact_by_res``
    finds; its generators are read back from its columns."""
    import pydoe

    names = _checked_factors(factors)
    if resolution < 3:
        raise ConfigError(f"resolution: must be at least 3 (III), got {resolution}")
    try:
        matrix = pydoe.fracfact_by_res(len(names), resolution).astype(np.int8)
    except ValueError as e:
        raise ConfigError(f"resolution {resolution} with {len(names)} factors: {e}") from None
    return TwoLevelDesign(factors=names, matrix=matrix, generators=_generators_of(matrix, letter_names(len(names))))


def _generators_of(matrix: NDArray[np.int8], letters: tuple[str, ...]) -> tuple[str, ...]:
    """Each column that is a product of earlier columns, as ``D=AB`` (the earlier independent
    columns are the base factors)."""
    base: list[int] = []
    out: list[str] = []
    for j in range(matrix.shape[1]):
        found = None
        for order in range(2, len(base) + 1):
            for combo in itertools.combinations(base, order):
                product = np.prod(matrix[:, list(combo)], axis=1)
                if np.array_equal(product, matrix[:, j]) or np.array_equal(product, -matrix[:, j]):
                    sign = "" if np.array_equal(product, matrix[:, j]) else "-"
                    found = f"{letters[j]}={sign}{''.join(letters[i] for i in combo)}"
                    break
            if found:
                break
        if found:
            out.append(found)
        else:
            base.append(j)
    return tuple(out)
