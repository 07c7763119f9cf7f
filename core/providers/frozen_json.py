"""JSON values nothing can change in place: a tool's schema, fixed when its spec is made.

A provider sends a session's tools as the bytes it encoded the first time, for as long as
the call's specs are the same objects (`SdkProvider.encoded_tools`); that is sound only if
no one can edit a spec's schema behind its back. The frozen dict and list are still a
`dict` and a `list` (they compare, read and encode as JSON exactly as before); every method
that would change them raises, and a copy (`dict(...)`, `copy.deepcopy`) is a plain,
changeable one.
"""

from __future__ import annotations

from typing import Any, NoReturn


def _refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError("a tool's schema is fixed once its spec is made: change a copy (copy.deepcopy)")


class FrozenDict(dict[str, Any]):
    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return thaw(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


class FrozenList(list[Any]):
    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = remove = pop = clear = sort = reverse = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return thaw(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))


def freeze(value: Any) -> Any:
    """`value` with every dict and list in it frozen (tuples keep their kind, their items
    frozen); already frozen parts are taken as they are."""
    if isinstance(value, FrozenDict | FrozenList):
        return value
    if isinstance(value, dict):
        return FrozenDict({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list):
        return FrozenList(freeze(item) for item in value)
    if isinstance(value, tuple):
        return tuple(freeze(item) for item in value)
    return value


def thaw(value: Any) -> Any:
    """A plain, changeable deep copy of a JSON value, frozen or not."""
    if isinstance(value, dict):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list):
        return [thaw(item) for item in value]
    if isinstance(value, tuple):
        return tuple(thaw(item) for item in value)
    return value
