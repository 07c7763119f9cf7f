"""The `run` and `chat` subcommands' arguments (kept light: `--stdio` builds this parser too)."""

from __future__ import annotations

import argparse
from typing import Any

from hermes_acp.session.options import EFFORT_IDS, MODE_IDS

SERVER_PLACES = ("in-process", "child")


def add_terminal_commands(sub: Any) -> None:
    run = sub.add_parser(
        "run",
        help="run one prompt in this directory and exit (for scripts and CI)",
        description="Run one prompt through the agent and exit when the turn ends. The answer goes "
        "to stdout, progress (tool calls, diffs, command output) to stderr.",
    )
    run.add_argument("task", help="the prompt; `-` reads it from stdin; @path attaches a file")
    run.add_argument(
        "--json", action="store_true", help="write every session/update as a JSON line on stdout"
    )
    run.add_argument(
        "--server",
        choices=SERVER_PLACES,
        default="in-process",
        help="where the ACP server runs: in this process (default) or a child `hermes-acp --stdio`",
    )
    _session_arguments(run)
    chat = sub.add_parser("chat", help="an interactive chat in the terminal")
    _session_arguments(chat)


def _session_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cwd", default=None, help="the workspace (default: the current directory)")
    parser.add_argument(
        "--mode", choices=MODE_IDS, default=None, help="approval mode (default: the configured one)"
    )
    parser.add_argument("--model", default=None, help="the model to use (default: the configured one)")
    parser.add_argument("--effort", choices=EFFORT_IDS, default=None, help="reasoning effort")
    parser.add_argument("--session", default=None, metavar="ID", help="continue this stored session")
