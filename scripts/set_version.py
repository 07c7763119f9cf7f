#!/usr/bin/env python3
"""Set the release version: `python scripts/set_version.py 0.2.0`.

The version lives in hermes_acp/__init__.py (`__version__`; pyproject reads it from there). This
writes it there and into the copies that cannot read it: the ACP registry entry (its version and
its `uvx` pin) and the VS Code extension's package.json and package-lock.json.
`tests/test_release_metadata.py` fails while any copy disagrees.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from registry_entry import ENTRY as REGISTRY_ENTRY
from registry_entry import ROOT, package_name

VERSION_FILE = Path("hermes_acp/__init__.py")
EXTENSION_MANIFESTS = (Path("editors/vscode/package.json"), Path("editors/vscode/package-lock.json"))
SEMVER = re.compile(r"\d+\.\d+\.\d+")
_VERSION_LINE = re.compile(r'^__version__ = "([^"]*)"$', re.MULTILINE)


def read_version(root: Path = ROOT) -> str:
    match = _VERSION_LINE.search((root / VERSION_FILE).read_text(encoding="utf-8"))
    if match is None:
        raise SystemExit(f'no `__version__ = "..."` line in {VERSION_FILE}')
    return match.group(1)


def set_version(version: str, root: Path = ROOT) -> None:
    if not SEMVER.fullmatch(version):
        raise SystemExit(f"{version!r} is not x.y.z (the ACP registry wants a semantic version)")
    source = root / VERSION_FILE
    source.write_text(
        _VERSION_LINE.sub(f'__version__ = "{version}"', source.read_text(encoding="utf-8")), encoding="utf-8"
    )

    def registry(entry: dict[str, Any]) -> None:
        entry["version"] = version
        uvx = entry["distribution"]["uvx"]
        uvx["package"] = f"{package_name(uvx['package'])}@{version}"

    def extension(manifest: dict[str, Any]) -> None:
        manifest["version"] = version
        if "" in manifest.get("packages", {}):  # the lockfile's copy of the root package
            manifest["packages"][""]["version"] = version

    _edit_json(root / REGISTRY_ENTRY, registry)
    for manifest in EXTENSION_MANIFESTS:
        _edit_json(root / manifest, extension)


def _edit_json(path: Path, edit: Any) -> None:
    """Rewrite in the layout the files already have (two spaces, as npm writes them)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("version", help="x.y.z")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    set_version(args.version, args.root)
    print(f"version {read_version(args.root)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
