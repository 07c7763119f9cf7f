"""Entry points of `hermes-acp run` and `hermes-acp chat`."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import Any

from hermes_acp.terminal import exit_codes
from hermes_acp.terminal.opening import choices_from


def run_command(args: Any) -> int:
    from hermes_acp.logs import setup_logging

    # The server runs in this process; its log would bury the answer and repeat what the
    # view already says: nothing on stderr but a crash, unless `hermes-acp --log-level ...
    # run` asks for it (--log-file gets warnings and up).
    setup_logging(args.log_level or "warning", args.log_file, quiet_stderr=args.log_level is None)
    if args.command == "chat":
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            sys.stderr.write("hermes-acp chat needs a terminal; from a script, use `hermes-acp run`\n")
            return exit_codes.USAGE
        from hermes_acp.terminal.chat import chat

        choices = choices_from(args)
        code = asyncio.run(chat(args, choices))
    else:
        code = _run(args)
    logging.shutdown()
    sys.stderr.flush()
    sys.stdout.flush()
    # Like the server: nothing left to tear down that the exit status depends on.
    os._exit(code)


def _run(args: Any) -> int:
    task = args.task
    if task == "-":
        task = sys.stdin.read()
    # The answer owns stdout: keep the real stdout for it and point fd 1 at stderr, so
    # nothing else (a library's print) lands in a script's captured answer.
    answer = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="replace", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from hermes_acp.terminal.run import run_once

    choices = choices_from(args)
    try:
        return asyncio.run(run_once(args, choices, task, answer, sys.stderr))
    except KeyboardInterrupt:
        return exit_codes.CANCELLED
    finally:
        answer.flush()
