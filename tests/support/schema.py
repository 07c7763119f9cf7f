"""Validate outgoing ACP messages against the vendored official JSON Schema (stable v1).

`validate("SessionNotification", params)` raises AssertionError naming the path of the
first violation. It is stricter than the schema on one point: a property the spec does
not define is an error wherever the spec type has a fixed set of properties, because
custom data belongs under `_meta` and nowhere else. (The published schema leaves
`additionalProperties` open, so a stray key at the root would otherwise pass.)
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, ValidationError

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "schema.json"
UNSTABLE_SCHEMA_PATH = SCHEMA_PATH.with_name("schema.unstable.json")


@functools.cache
def _definitions(unstable: bool = False) -> dict[str, Any]:
    path = UNSTABLE_SCHEMA_PATH if unstable else SCHEMA_PATH
    schema = json.loads(path.read_text(encoding="utf-8"))
    return _closed(schema["$defs"])


def _ref_name(node: Any) -> str | None:
    if isinstance(node, dict) and isinstance(node.get("$ref"), str):
        return node["$ref"].rsplit("/", 1)[-1]
    return None


def _mixins(defs: dict[str, Any]) -> set[str]:
    """Definitions that are pulled into a variant which adds its own properties
    (`{"properties": {"type": ...}, "allOf": [{"$ref": X}]}`): closing X itself would
    reject the variant's tag, so those are closed at the place that uses them."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "properties" in node:
                for part in node.get("allOf", []):
                    name = _ref_name(part)
                    if name:
                        found.add(name)
                # A variant of such a node pulling in a definition (ElicitationFormMode's
                # session or request scope) adds to the same object: also closed by the user.
                for variant in [*node.get("anyOf", []), *node.get("oneOf", [])]:
                    for part in variant.get("allOf", []) if isinstance(variant, dict) else []:
                        name = _ref_name(part)
                        if name:
                            found.add(name)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(defs)
    return found


def _closed(defs: dict[str, Any]) -> dict[str, Any]:
    defs = copy.deepcopy(defs)
    mixins = _mixins(defs)

    def uses_mixin(node: dict[str, Any]) -> bool:
        parts = [node, *node.get("allOf", []), *node.get("anyOf", []), *node.get("oneOf", [])]
        return any(_ref_name(part) in mixins for part in parts)

    def close(node: Any, *, open_: bool = False) -> None:
        if isinstance(node, list):
            for value in node:
                close(value)
            return
        if not isinstance(node, dict):
            return
        has_properties = "properties" in node
        if not open_ and (has_properties or uses_mixin(node)):
            # unevaluatedProperties sees through allOf/$ref, so a variant keeps the
            # properties of the definition it pulls in.
            node["unevaluatedProperties"] = False
        for key, value in node.items():
            if key == "properties":
                for prop in value.values():
                    close(prop)
            elif key in ("allOf", "oneOf", "anyOf") and (has_properties or open_):
                # This node (or, when open, the one using it) closes itself over
                # everything its parts evaluate; a part closed on its own would reject
                # the keys that node adds.
                for part in value:
                    close(part, open_=True)
            else:
                close(value)

    for name, definition in defs.items():
        close(definition, open_=name in mixins)
    _dispatch_tagged_unions(defs)
    return defs


def _dispatch_tagged_unions(node: Any) -> None:
    """Rewrite each `oneOf` that has a `discriminator` as "if the tag is X, then branch X".

    Same meaning for tagged data, but only the matching branch is checked, which makes
    validation several times faster and its errors point into that branch.
    """
    if isinstance(node, list):
        for value in node:
            _dispatch_tagged_unions(value)
        return
    if not isinstance(node, dict):
        return
    for value in node.values():
        _dispatch_tagged_unions(value)
    tag = node.get("discriminator", {}).get("propertyName")
    branches = node.get("oneOf")
    if not tag or not branches:
        return
    try:
        values = [branch["properties"][tag]["const"] for branch in branches]
    except (KeyError, TypeError):
        return
    del node["oneOf"], node["discriminator"]
    node.setdefault("allOf", []).extend(
        {"if": {"properties": {tag: {"const": value}}, "required": [tag]}, "then": branch}
        for value, branch in zip(values, branches, strict=True)
    )
    node["allOf"].append({"required": [tag], "properties": {tag: {"enum": values}}})


@functools.cache
def _validator(def_name: str, unstable: bool = False) -> Draft202012Validator:
    defs = _definitions(unstable)
    if def_name not in defs:
        raise KeyError(f"the ACP schema has no definition {def_name!r}")
    return Draft202012Validator({"$ref": f"#/$defs/{def_name}", "$defs": defs})


def _innermost(error: ValidationError) -> ValidationError:
    """A oneOf failure hides the useful message in its context: follow the branch whose
    tag (`type`, `sessionUpdate`, `outcome`, ...) matched, down to the deepest error."""
    while error.context:
        depth = len(error.absolute_path) + 1
        branches: dict[Any, list[ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        tagged = [
            errs
            for errs in branches.values()
            if not any(e.validator == "const" and len(e.absolute_path) == depth for e in errs)
        ]
        pool = tagged[0] if tagged else list(error.context)
        error = max(pool, key=lambda e: len(e.absolute_path))
    return error


def validate(def_name: str, instance: dict[str, Any], *, unstable: bool = False) -> None:
    """Raise AssertionError (with the JSON path of the violation) unless `instance` is a
    valid `def_name` of the ACP schema (`unstable`: of the draft schema, for what only the
    drafts define, such as session/fork)."""
    errors = [_innermost(e) for e in _validator(def_name, unstable).iter_errors(instance)]
    if not errors:
        return
    # A broken nested value also leaves its parent's keys "unevaluated"; the nested
    # error is the one that says what is wrong.
    error = min(errors, key=lambda e: (-len(e.absolute_path), e.validator == "unevaluatedProperties"))
    path = "$" + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    raise AssertionError(
        f"{def_name} invalid at {path}: {error.message}\n{json.dumps(instance, indent=1)[:2000]}"
    )
