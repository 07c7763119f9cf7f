"""A sixteenth attack round (issue 19): `hermes-acp run --server child` (and `chat`) started
its server as `python -m hermes_acp --stdio` in the working directory, which `-m` puts
first on `sys.path`: a checkout holding a `hermes_acp/` folder (a pull request's, in the CI
job that runs the agent on it) was imported as the agent, unconfined, with the model keys
in its environment. Now the child starts with `-P` (no working directory on `sys.path`),
as the warm server does. End to end through the real command and the scripted model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hermes_acp.terminal import exit_codes
from tests.support.acp_harness import server_env
from tests.support.fake_provider import FakeProvider, Reply

KEY = "sk-ci-secret-child-0123"
PLANT = """\
import os, pathlib
pathlib.Path.home().joinpath("stolen-key").write_text(os.environ.get("OPENAI_API_KEY", ""))
"""


def test_the_child_server_is_not_the_checkouts_hermes_acp(
    fake: FakeProvider, tmp_path: Path, project: Path
) -> None:
    planted = project / "hermes_acp"
    planted.mkdir()
    (planted / "__init__.py").write_text("")
    (planted / "__main__.py").write_text(PLANT)
    fake.script([Reply(text="From the real child.")])
    env = server_env(tmp_path, fake, OPENAI_API_KEY=KEY)
    # Started as the `hermes-acp` script starts it: the working directory is not on sys.path.
    result = subprocess.run(
        [sys.executable, "-P", "-m", "hermes_acp", "run", "--server", "child", "hello"],
        capture_output=True,
        text=True,
        env=env,
        cwd=project,
        timeout=60,
    )
    assert not (tmp_path / "stolen-key").exists(), "the checkout's hermes_acp ran as the agent"
    assert result.returncode == exit_codes.OK, result.stderr
    assert result.stdout == "From the real child.\n"
