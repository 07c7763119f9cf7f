"""hermes_acp/startup/lazy_package.py on packages made for the test: a package of plain re-exports
resolves each name by importing only its submodule; any other package runs its
`__init__` on the first lookup; either way a reader sees the whole package."""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_acp.startup.lazy_package import defer_package_init, defer_package_tree


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    name = f"lazy_{uuid.uuid4().hex[:8]}"
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path / name, name
    for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
        del sys.modules[module]


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def make_types_package(package: Path) -> None:
    write(
        package / "__init__.py",
        '''\
        """Generated."""
        from __future__ import annotations
        from .alpha import Alpha as Alpha
        from .beta import Beta as Beta, BETA_LIMIT
        from . import gamma
        from .nested import Inner as Inner
        ''',
    )
    write(package / "alpha.py", "class Alpha: pass\n")
    write(package / "beta.py", "class Beta: pass\nBETA_LIMIT = 3\n")
    write(package / "gamma.py", "G = 1\n")
    write(package / "nested" / "__init__.py", "from .inner import Inner as Inner\n")
    write(package / "nested" / "inner.py", "class Inner: pass\n")


def test_a_package_of_re_exports_imports_only_the_submodule_a_name_comes_from(
    root: tuple[Path, str],
) -> None:
    package, name = root
    make_types_package(package)
    defer_package_tree(name)
    assert f"{name}.alpha" not in sys.modules and f"{name}.beta" not in sys.modules

    module = sys.modules[name]
    assert module.Alpha.__name__ == "Alpha"
    assert f"{name}.alpha" in sys.modules and f"{name}.beta" not in sys.modules
    assert module.Alpha is sys.modules[f"{name}.alpha"].Alpha  # the same class, not a copy

    assert module.BETA_LIMIT == 3  # a name re-exported under its own name
    assert module.gamma.G == 1  # `from . import gamma`
    assert module.nested.Inner.__name__ == "Inner"  # a subpackage, deferred in turn
    with pytest.raises(AttributeError, match="no attribute 'Missing'"):
        module.Missing  # noqa: B018


def test_a_star_import_of_re_exports_gets_every_name(root: tuple[Path, str]) -> None:
    package, name = root
    make_types_package(package)
    defer_package_init(name)
    namespace: dict[str, object] = {}
    exec(f"from {name} import *", namespace)
    assert {"Alpha", "Beta", "BETA_LIMIT", "gamma", "Inner"} <= set(namespace)


def test_a_package_that_does_more_than_re_export_runs_its_init_on_the_first_lookup(
    root: tuple[Path, str],
) -> None:
    package, name = root
    write(package / "__init__.py", "from .alpha import Alpha as Alpha\nCOUNT = len([Alpha])\n")
    write(package / "alpha.py", "class Alpha: pass\n")
    defer_package_init(name)
    module = sys.modules[name]
    assert "COUNT" not in vars(module)
    assert module.COUNT == 1  # the __init__ ran: its own statements are there
    assert module.Alpha is sys.modules[f"{name}.alpha"].Alpha


def test_a_declared_all_keeps_the_package_lazy_and_decides_the_star_import(root: tuple[Path, str]) -> None:
    package, name = root
    write(package / "__init__.py", 'from .alpha import Alpha, Hidden\n__all__ = ["Alpha"]\n')
    write(package / "alpha.py", "class Alpha: pass\nclass Hidden: pass\n")
    defer_package_init(name)
    assert f"{name}.alpha" not in sys.modules
    namespace: dict[str, object] = {}
    exec(f"from {name} import *", namespace)
    assert "Alpha" in namespace and "Hidden" not in namespace
    assert sys.modules[name].Hidden.__name__ == "Hidden"  # still there by name, as before
