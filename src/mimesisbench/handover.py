"""Handing a large value to a callee that becomes its only owner.

A caller that passes a value keeps it alive until the call returns, whatever the callee does.
``Handover`` lets the callee hold the only reference and drop it once read: a 10 M-event audit
table with its path texts is about 400 MB, a third of a fit's peak memory, and the fit needs it
only for its first second (``mimesisbench.model.fit.prepare``). The caller must keep no other
reference (``Handover(table)`` then ``del table``)."""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")


class Handover(Generic[T]):
    """One value, given up by its owner: ``take()`` returns it once and keeps no reference."""

    __slots__ = ("_value", "_taken")

    def __init__(self, value: T) -> None:
        self._value: T | None = value
        self._taken = False

    def take(self) -> T:
        if self._taken:
            raise RuntimeError("a handed-over value was taken twice")
        value, self._value, self._taken = self._value, None, True
        return value  # type: ignore[return-value]  # set in __init__, cleared only here


def owned(value: T | Handover[T]) -> T:
    """``value`` itself, or what it hands over (the callee's side of ``Handover``)."""
    return value.take() if isinstance(value, Handover) else value
