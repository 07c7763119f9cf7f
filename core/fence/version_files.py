"""Version managers' shims choose what runs from files of the workspace.

pyenv, rbenv, nodenv, asdf and mise put a `shims` folder on PATH: `python3` there is a
script that reads `.python-version`, `.tool-versions` or `mise.toml` in the folder it runs
in and every folder above, and execs the interpreter they name. asdf's `python path:./x`
names any folder, the workspace's too. So an "always" for `python3 build.py` outside the
sandbox, with `python3` a shim, is bound to those files as well (absent ones too: creating
one later asks again).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

VERSION_FILES: tuple[str, ...] = (
    ".tool-versions",
    ".python-version",
    ".ruby-version",
    ".node-version",
    ".nvmrc",
    ".go-version",
    ".java-version",
    ".perl-version",
    ".php-version",
    "mise.toml",
    ".mise.toml",
    "mise.local.toml",
    ".mise.local.toml",
    ".config/mise.toml",
    ".config/mise/config.toml",
    ".rtx.toml",
)


def is_shim(program: str) -> bool:
    """Whether PATH (as an unconfined command gets it) finds `program` in a `shims` folder."""
    found = shutil.which(program, path=os.environ.get("PATH", os.defpath))
    return found is not None and Path(found).parent.name == "shims"


def version_files(cwd: Path) -> list[Path]:
    """Every file a shim may read in `cwd` and the folders above it."""
    return [folder / name for folder in (cwd, *cwd.parents) for name in VERSION_FILES]
