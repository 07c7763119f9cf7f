"""The ACP registry's rules for an entry (github.com/agentclientprotocol/registry), applied here.

Its build script refuses an entry unless `agent.json` passes the vendored JSON schema
(`tests/registry_schema/`) and a few checks the schema cannot express. (Its CI then launches the
agent: scripts/registry_entry.py holds that side, and reads our entry.) This module is our own
code for those checks, written from reading the registry's scripts: each returns the problems it found,
an empty list when the registry would accept the entry. (The registry also asks PyPI whether
the package exists; that needs the network and a published release, so it is not repeated.)
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "registry_schema" / "agent.schema.json"

DISTRIBUTION_KINDS = frozenset({"binary", "npx", "uvx"})
ICON_SIZE = 16
THEMED_PAINT = frozenset({"currentcolor", "none", "inherit"})


@cache
def agent_schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def entry_problems(entry: dict[str, Any], folder: str) -> list[str]:
    """What the registry's build refuses in `agent.json` of the entry folder `folder`."""
    validator = jsonschema.Draft7Validator(agent_schema())  # no format checker: neither has the registry
    schema_errors = [
        f"{'.'.join(map(str, error.absolute_path)) or 'root'}: {error.message}"
        for error in validator.iter_errors(entry)
    ]
    if schema_errors:
        return schema_errors  # the build stops at the schema too
    problems: list[str] = []
    agent_id = entry["id"]
    if agent_id != folder:
        problems.append(f"id {agent_id!r} does not name its folder {folder!r}")
    parts = entry["version"].split(".")
    if len(parts) < 3 or not all(part.isdigit() for part in parts[:3]):
        problems.append(f"version {entry['version']!r} is not x.y.z")
    distribution = entry["distribution"]
    unknown = set(distribution) - DISTRIBUTION_KINDS
    if unknown:
        problems.append(f"unknown distribution kinds: {sorted(unknown)}")
    for kind in ("npx", "uvx"):
        package = distribution.get(kind, {}).get("package")
        if package is not None:
            problems.extend(_pinned_problems(kind, package, entry["version"]))
    return problems


def _pinned_problems(kind: str, package: str, version: str) -> list[str]:
    """A package is pinned to the entry's own version, never to `latest`."""
    if "@latest" in package.lower():
        return [f"{kind} package {package!r} is not pinned"]
    pinned = re.search(r"[=@]+(\d[\d.]*)", package)
    if pinned and pinned.group(1) != version:
        return [f"{kind} package pins {pinned.group(1)}, the entry says {version}"]
    return []


def icon_problems(svg_text: str) -> list[str]:
    """The registry's icon rules: a square 16x16 SVG painted only in `currentColor`, no comments."""
    problems: list[str] = []
    if "<!--" in svg_text:
        problems.append("comments (they break the registry's MDX pages)")
    try:
        root = ET.fromstring(svg_text)
    except ET.ParseError as exc:
        return [*problems, f"not XML: {exc}"]
    if _local(root.tag) != "svg":
        return [*problems, f"root element is <{_local(root.tag)}>"]
    size = _size(root)
    if size is None:
        return [*problems, "no width/height or viewBox"]
    if size != (ICON_SIZE, ICON_SIZE):
        problems.append(f"size {size[0]:g}x{size[1]:g}, not {ICON_SIZE}x{ICON_SIZE}")
    paints = list(_paints(root))
    problems.extend(
        f"hard-coded {name} {value!r}" for name, value in paints if value.lower() not in THEMED_PAINT
    )
    if not any(value.lower() == "currentcolor" for _, value in paints):
        problems.append("nothing painted in currentColor")
    return problems


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _size(root: ET.Element) -> tuple[float, float] | None:
    width, height = root.get("width"), root.get("height")
    if width and height:
        try:
            return _number(width), _number(height)
        except ValueError:
            pass
    box = (root.get("viewBox") or "").split()
    if len(box) == 4:
        try:
            return float(box[2]), float(box[3])
        except ValueError:
            return None
    return None


def _number(length: str) -> float:
    return float(re.sub(r"[a-z%]+$", "", length.strip(), flags=re.IGNORECASE))


def _paints(root: ET.Element) -> list[tuple[str, str]]:
    """Every fill and stroke the icon sets: attributes, inline styles and <style> rules."""
    found: list[tuple[str, str]] = []
    for element in root.iter():
        for name in ("fill", "stroke"):
            value = element.get(name)
            if value is not None:
                found.append((name, value.strip()))
        for declaration in (element.get("style") or "").split(";"):
            name, colon, value = declaration.partition(":")
            if colon and name.strip().lower() in ("fill", "stroke"):
                found.append((name.strip().lower(), value.strip()))
        if _local(element.tag) == "style" and element.text:
            for name, value in re.findall(r"\b(fill|stroke)\s*:\s*([^;}\s]+)", element.text, re.IGNORECASE):
                found.append((name.lower(), value))
    return found
