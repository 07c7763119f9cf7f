"""Inline interpreter code: shown harmless, or it asks."""

from __future__ import annotations

import pytest

from hermes_core.command_rules.inline_code import (
    awk_is_harmless,
    python_is_harmless,
    script_is_harmless,
    sed_is_harmless,
)


@pytest.mark.parametrize(
    "code",
    [
        "print(1)",
        "import sys; print(sys.version)",
        'import json, sys; print(json.load(sys.stdin)["name"])',
        "import os; print(os.getcwd(), os.path.join('a', 'b'))",
        "import torch; print(torch.__version__)",
        "print(sum(x * x for x in range(10)))",
        "import re; print(re.sub('a', 'b', 'aaa'))",
        "from datetime import datetime; print(datetime.now())",
        "from os.path import join; print(join('a', 'b'))",
    ],
)
def test_python_that_only_computes_is_harmless(code: str) -> None:
    assert python_is_harmless(code)


@pytest.mark.parametrize(
    "code",
    [
        "import shutil; shutil.rmtree('x')",
        "import os\nwhile True: os.fork()",
        "import os as o; o.system('id')",
        "from os import system",
        "__import__('os').system('id')",
        "open('x', 'w').write('')",
        "exec('print(1)')",
        "().__class__.__bases__[0].__subclasses__()",
        "import sys; sys.modules['os'].system('id')",
        "import os; os.path.os.system('id')",
        "import uuid; uuid.os.system('id')",
        "import random; random._os.remove('x')",
        "(x for x in []).gi_frame.f_globals",
        "import os; f = os; f.system('id')",
        "import json as os; os = __import__('os')",
        "print(getattr(1, 'real'))",
        "import torch; torch.__version__()",
        "def f(): pass",
        "class A: pass",
        "syntax error (",
    ],
)
def test_python_that_may_reach_files_or_processes_is_not(code: str) -> None:
    assert not python_is_harmless(code)


@pytest.mark.parametrize(
    ("family", "code", "harmless"),
    [
        ("perl", "s/foo/bar/g", True),
        ("perl", "print if /TODO/", True),
        ("perl", "unlink glob('*')", False),
        ("perl", "s/(.*)/$1/ee", False),
        ("perl", "&{'sys'.'tem'}('id')", False),
        ("ruby", "puts 1 + 1", True),
        ("ruby", "FileUtils.rm_rf('x')", False),
        ("ruby", "Kernel.send(:sys + :tem)", False),
        ("node", "console.log(1 + 1)", True),
        ("node", "process.version", True),
        ("node", "process.kill(-1)", False),
        ("node", "require('fs')", False),
        ("node", "[][x][x]('return 1')()", False),
        ("node", "\\u0065val('1')", False),
        ("php", "echo 1;", True),
        ("php", "$f = 'system'; $f('id');", False),
        ("php", "array_filter(['id'], 'sys' . 'tem');", False),
        ("php", "echo phpversion();", True),
        ("node", "arguments[1]('child_' + 'process')", False),
        ("node", "x.execFileSync('id')", False),
        ("ruby", ":system.to_proc.call(self, 'id')", False),
        ("lua", "print(1)", False),
    ],
)
def test_other_languages_pass_only_without_a_way_out(family: str, code: str, harmless: bool) -> None:
    assert script_is_harmless(family, code) is harmless


def test_awk_and_sed_run_no_commands_and_write_no_files() -> None:
    assert awk_is_harmless("{print $1}") and awk_is_harmless("$3 > 100 {n++} END {print n}")
    assert awk_is_harmless("a || b")
    assert not awk_is_harmless('BEGIN{system("id")}')
    assert not awk_is_harmless('{print | "sh"}')
    assert not awk_is_harmless('{print > "/etc/x"}')
    assert sed_is_harmless("s/a/b/g") and sed_is_harmless("1,20p") and sed_is_harmless("/x/d")
    assert not sed_is_harmless("s/a/b/e") and not sed_is_harmless("1e id") and not sed_is_harmless("w /etc/x")
    assert not sed_is_harmless("s/a/b/w out")
