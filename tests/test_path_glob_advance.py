"""`PathGlob.advance`, which the sandbox's walk for wildcard `Edit(…)` rules reads a folder
once and then each name in it with, agrees with `fullmatch`, the file tools' test, on every
path: the sandbox guards exactly what the file tools guard."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_core.policy.rule_matching import path_pattern

BASE = Path("/work/project")
PATHS = [
    "/work/project/a.pem",
    "/work/project/keys/a.pem",
    "/work/project/.hidden/deep/er/b.pem",
    "/work/project/a.pem.bak",
    "/work/project/x.pem/inside.txt",
    "/work/project/src/main.rs",
    "/work/project/src/sub/deep.rs",
    "/work/project/lib/main.rs",
    "/work/project/prod.yml",
    "/work/project/deploy/eu/prod.yml",
    "/work/other/a.pem",
    "/work/project",
]


SPECS = ["**/*.pem", "*.pem", "src/*.rs", "prod.yml", "src/**/*.r?", "//work/*/a.pem"]


@pytest.mark.parametrize("spec", SPECS)
def test_advance_from_a_folder_agrees_with_fullmatch(spec: str) -> None:
    glob = path_pattern(spec, BASE)
    for path in PATHS:
        folder, _, name = path.rpartition("/")
        by_folder = glob.accepts(glob.advance(name, glob.advance(folder + "/")))
        assert by_folder == glob.fullmatch(path), (spec, path)
        assert glob.accepts(glob.advance(path)) == glob.fullmatch(path), (spec, path)
        if glob.fullmatch(path):  # a folder a match lies below is worth walking
            assert glob.advance(folder + "/"), (spec, path)
    assert not glob.advance("/elsewhere/") or spec.startswith("//")
