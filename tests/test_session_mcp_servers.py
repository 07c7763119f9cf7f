"""The editor's `mcpServers` entries, as the SDK parses them, become MCP connection configs."""

from __future__ import annotations

from acp import schema

from hermes_acp.session.mcp_servers import problems_note, server_configs


def parsed(*entries: dict) -> list:
    request = schema.NewSessionRequest.model_validate({"cwd": "/tmp", "mcpServers": list(entries)})
    return list(request.mcp_servers)


def test_stdio_http_and_sse_entries_keep_their_command_env_url_and_headers() -> None:
    configs = server_configs(
        parsed(
            {
                "name": "files",
                "command": "/usr/bin/mcp-files",
                "args": ["--root", "/srv"],
                "env": [{"name": "TOKEN", "value": "s3cret"}, {"name": "EMPTY", "value": ""}],
            },
            {
                "type": "http",
                "name": "remote",
                "url": "http://127.0.0.1:9/mcp",
                "headers": [{"name": "Authorization", "value": "Bearer t"}],
            },
            {"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []},
        )
    )
    files, remote, old = configs
    assert (files.name, files.transport, files.command, files.args) == (
        "files",
        "stdio",
        "/usr/bin/mcp-files",
        ["--root", "/srv"],
    )
    assert files.env == {"TOKEN": "s3cret", "EMPTY": ""}
    assert (remote.transport, remote.url, remote.headers) == (
        "http",
        "http://127.0.0.1:9/mcp",
        {"Authorization": "Bearer t"},
    )
    assert (old.transport, old.url, old.headers) == ("sse", "http://127.0.0.1:9/sse", {})
    assert all(config.problem() is None for config in configs)


def test_servers_of_a_kind_we_do_not_connect_to_are_left_out() -> None:
    entries = parsed({"type": "acp", "name": "bridge", "serverId": "in-editor"})
    assert len(entries) == 1
    assert server_configs(entries) == []
    assert server_configs([{"type": "websocket", "name": "ws", "url": "ws://127.0.0.1:9"}]) == []


def test_the_note_names_every_server_left_out_on_its_own_line() -> None:
    note = problems_note(["MCP server 'a': cannot start it; skipped", "MCP server 'b': refused; skipped"])
    assert note.splitlines() == [
        "**Some MCP servers are not available in this session:**",
        "- MCP server 'a': cannot start it; skipped",
        "- MCP server 'b': refused; skipped",
    ]
