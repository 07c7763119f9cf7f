"""Skills (SKILL.md folders), prompt commands (`.hermes/commands/*.md`), MCP prompts, and
unknown slash commands, over the real server."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import AcpClient, ServerProcess
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.server_setup import ServerSetup

pytestmark = pytest.mark.asyncio(loop_scope="module")

MCP_SERVER = str(Path(__file__).parent / "support" / "mcp_server.py")
DEPLOY_BODY = "Run ./helper.sh with the environment name, then check the health URL."


def install_deploy_skill(home: Path) -> None:
    """A user-wide skill with a helper script beside it."""
    skill = home / ".hermes-acp" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: deploy\ndescription: Deploy the service to an environment\n---\n{DEPLOY_BODY}\n"
    )
    (skill / "helper.sh").write_text("#!/bin/sh\necho deploying\n")


SERVER_SETUP = ServerSetup(prepare_home=install_deploy_skill)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    lint = path / ".hermes" / "skills" / "lint"
    lint.mkdir(parents=True)
    (lint / "SKILL.md").write_text(
        "---\nname: lint\ndescription: >\n  Lint the code\n  the project's way\n---\n"
        "Use ruff, never flake8.\n"
    )
    broken = path / ".claude" / "skills" / "broken"
    broken.mkdir(parents=True)
    (broken / "SKILL.md").write_text("---\nname: [unclosed\ndescription: x\n---\nbody\n")
    nameless = path / ".claude" / "skills" / "nameless"
    nameless.mkdir(parents=True)
    (nameless / "SKILL.md").write_text("no front matter at all\n")
    commands = path / ".hermes" / "commands"
    commands.mkdir(parents=True)
    (commands / "explain.md").write_text(
        "---\ndescription: Explain a piece of code simply\n---\nExplain $ARGUMENTS to a new colleague.\n"
    )
    (commands / "standup.md").write_text("Summarise what changed in the repository today.\n")
    return path


async def menu(client: AcpClient, session: str) -> dict[str, dict[str, Any]]:
    update = await client.wait_for_update("available_commands_update", session)
    return {command["name"]: command for command in update["availableCommands"]}


def system_prompt(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "system")


def last_user_text(body: dict[str, Any]) -> str:
    content = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


async def test_skills_are_listed_once_and_loaded_with_the_skill_tool(
    client: AcpClient, server: ServerProcess, fake: FakeProvider, project: Path, server_home: Path
) -> None:
    session = (await client.new_session(project))["sessionId"]
    commands = await menu(client, session)
    assert {"help", "deploy", "lint", "explain", "standup"} <= set(commands)
    assert "broken" not in commands and "nameless" not in commands
    assert commands["lint"]["description"] == "Skill: Lint the code the project's way"
    assert commands["explain"]["description"] == "Explain a piece of code simply"
    # The malformed skills are named in the log, with why.
    assert "broken/SKILL.md left out: its front matter is not valid YAML" in server.stderr
    assert "nameless/SKILL.md left out: its front matter has no `name`" in server.stderr

    fake.script(
        [Reply(tool_calls=[ToolCallSpec("skill", {"name": "deploy"}, id="s1")]), Reply(text="deployed")]
    )
    before = len(fake.requests)
    assert await client.prompt(session, "deploy to staging") == {"stopReason": "end_turn"}
    first, second = (request.body for request in fake.requests[before:])
    system = system_prompt(first)
    assert "`deploy`: Deploy the service to an environment" in system
    assert "`lint`: Lint the code the project's way" in system
    assert DEPLOY_BODY not in system  # bodies enter the conversation only when loaded
    assert "skill" in [tool["function"]["name"] for tool in first["tools"]]
    result = next(m for m in second["messages"] if m["role"] == "tool")
    assert DEPLOY_BODY in result["content"]
    assert str(server_home / ".hermes-acp" / "skills" / "deploy" / "helper.sh") in result["content"]
    assert system_prompt(second) == system  # cache-stable within the session


async def test_a_skill_as_a_slash_command_goes_in_as_the_users_message(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    session = (await client.new_session(project))["sessionId"]
    fake.script([Reply(text="linted")])
    before = len(fake.requests)
    assert await client.prompt(session, "/lint src/app.py") == {"stopReason": "end_turn"}
    [request] = fake.requests[before:]
    user = last_user_text(request.body)
    assert "Use ruff, never flake8." in user and "src/app.py" in user
    assert "Use ruff, never flake8." not in system_prompt(request.body)


async def test_prompt_commands_fill_in_their_arguments(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    session = (await client.new_session(project))["sessionId"]
    fake.script([Reply(text="it adds"), Reply(text="nothing changed")])
    before = len(fake.requests)
    await client.prompt(session, "/explain the retry loop in sse.py")
    await client.prompt(session, "/standup")
    first, second = (request.body for request in fake.requests[before:])
    assert "Explain the retry loop in sse.py to a new colleague." in last_user_text(first)
    assert "Summarise what changed in the repository today." in last_user_text(second)


async def test_an_unknown_command_is_answered_without_the_model(
    client: AcpClient, fake: FakeProvider, project: Path
) -> None:
    session = (await client.new_session(project))["sessionId"]
    before = len(fake.requests)
    assert await client.prompt(session, "/frobnicate now") == {"stopReason": "end_turn"}
    assert len(fake.requests) == before
    assert "Unknown command `/frobnicate`" in client.text(session)
    await client.prompt(session, "/help")
    assert len(fake.requests) == before
    assert "`/lint <what to apply it to>`" in client.text(session)
    assert "`/explain <arguments>`" in client.text(session)
    # A path at the start is a prompt, not a command.
    fake.script([Reply(text="yes")])
    await client.prompt(session, "/usr/bin is where python lives?")
    assert len(fake.requests) == before + 1
    assert "/usr/bin is where python lives?" in last_user_text(fake.requests[-1].body)


async def test_mcp_prompts_are_commands(client: AcpClient, fake: FakeProvider, project: Path) -> None:
    entry = {"name": "tester", "command": sys.executable, "args": [MCP_SERVER], "env": []}
    session = (await client.new_session(project, mcpServers=[entry]))["sessionId"]
    commands = await menu(client, session)
    assert commands["review"]["description"] == "tester: Ask for a careful review of one file."
    assert commands["review"]["input"] == {"hint": "path"}
    fake.script([Reply(text="two bugs")])
    before = len(fake.requests)
    await client.prompt(session, "/review core/app.py")
    [request] = fake.requests[before:]
    assert "Review core/app.py carefully and list every bug you find." in last_user_text(request.body)
