"""Errors a user must read: in `error.data.details` too (Toad shows only that), in the
log, and a bad configuration stops `--stdio` at start-up with the message."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.acp_harness import server_env, spawn_server

pytestmark = pytest.mark.asyncio


async def test_no_key_is_explained_in_details_and_logged(tmp_path: Path) -> None:
    env = server_env(tmp_path)  # no fake provider: no key anywhere
    async with spawn_server(env) as process:
        await process.request(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        reply = await process.request(1, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
        error = reply["error"]
        assert error["code"] == -32000
        assert "hermes-acp setup" in error["message"]
        assert error["data"]["details"] == error["message"]
        assert "No API key configured" in process.stderr
        reply = await process.request(2, "authenticate", {"methodId": "env"})
        assert reply["error"]["data"]["details"] == reply["error"]["message"]


async def test_a_bad_configuration_stops_stdio_at_start_up(tmp_path: Path) -> None:
    env = server_env(tmp_path, OPENAI_API_KEY="sk-test")
    config = Path(env["HERMES_ACP_HOME"]) / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('modle = "gpt-4.1"\n')
    async with spawn_server(env, check_exit=False) as process:
        assert await process.wait() == 2
        assert "unknown key 'modle'" in process.stderr
        assert "hermes-acp is misconfigured" in process.stderr


async def test_a_configuration_broken_while_serving_is_explained_in_details(tmp_path: Path) -> None:
    env = server_env(tmp_path, OPENAI_API_KEY="sk-test")
    config = Path(env["HERMES_ACP_HOME"]) / "config.toml"
    async with spawn_server(env) as process:
        await process.request(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("default_mode = 'reckless'\n")
        reply = await process.request(1, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
        error = reply["error"]
        assert error["code"] == -32603
        assert "default_mode" in error["data"]["details"]
        assert error["data"]["details"] == error["message"]
