"""`hermes-acp`: the ACP server on stdio (the default), `--check`, `--version`; `setup` and
`logout` are `hermes_acp.account`, `run` and `chat` `hermes_acp.terminal`, `warm`
`hermes_acp.warm.control`."""

from __future__ import annotations

import contextlib
import os
import sys

from hermes_acp import __version__

# Not `typing` (~5 ms): a spawn a warm server serves imports no more than it must (warm/stub.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping
    from typing import Any, NoReturn, TextIO

    from hermes_acp.startup import Handover

TERMINAL_HINT = (
    "hermes-acp --stdio speaks ACP JSON-RPC on stdin/stdout; for a terminal chat run `hermes-acp chat`"
)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv in ([], ["--stdio"]):  # as editors start it: no parser (argparse, shutil) before the answer
        environ = dict(os.environ)
        if not os.isatty(0):
            from hermes_acp.warm.stub import hand_over

            served = hand_over(environ)  # a warm server's child served the editor: its exit code
            if served is not None:
                return served
        return run_stdio(None, None, None, warm_environ=environ)
    args = _parser(terminal_commands=bool({"run", "chat"} & set(argv))).parse_args(argv)
    if args.version:
        print(f"hermes-acp {__version__}")
        return 0
    if args.command == "setup":
        from hermes_acp.account import run_setup

        return run_setup(sys.stdin, sys.stderr)
    if args.command == "logout":
        from hermes_acp.account import run_logout

        return run_logout(sys.stderr)
    if args.command == "warm":
        from hermes_acp.warm.control import run_warm

        return run_warm(args.action, os.environ, sys.stdout)
    if args.command in ("run", "chat"):
        from hermes_acp.terminal.commands import run_command

        return run_command(args)
    if args.check:
        return run_check(sys.stdout)
    return run_stdio(args.log_level, args.log_file, args.trace)


def _parser(*, terminal_commands: bool = True) -> argparse.ArgumentParser:
    """The command line. `terminal_commands=False` names `run` and `chat` without their
    arguments, so `--stdio` start-up does not import what only they need."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="hermes-acp",
        description="A coding agent for editors, speaking the Agent Client Protocol on stdin/stdout.",
    )
    parser.add_argument("--stdio", action="store_true", help="serve ACP on stdin/stdout (the default)")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument(
        "--check",
        action="store_true",
        help="check the configuration, credentials and endpoint, then exit (0 when all is well)",
    )
    parser.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default=None,
        help="log level on stderr (default: HERMES_ACP_LOG_LEVEL or info)",
    )
    parser.add_argument("--log-file", default=None, help="also write the log to this file")
    parser.add_argument(
        "--trace", default=None, metavar="FILE", help="write every wire message to FILE (JSON lines)"
    )
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("setup", help="interactive set-up: provider, API key, model; writes config.toml")
    sub.add_parser("logout", help="remove the API keys setup wrote to config.toml")
    warm = sub.add_parser("warm", help="the warm servers that start new threads fast (README: Warm start)")
    warm.add_argument("action", choices=("status", "stop"), help="list them, or stop them listening")
    if terminal_commands:
        from hermes_acp.terminal.arguments import add_terminal_commands

        add_terminal_commands(sub)
    else:
        sub.add_parser("run", help="run one prompt in this directory and exit (for scripts and CI)")
        sub.add_parser("chat", help="an interactive chat in the terminal")
    return parser


# -- the server ---------------------------------------------------------------------------------


def run_stdio(
    log_level: str | None,
    log_file: str | None,
    trace: str | None,
    *,
    warm_environ: Mapping[str, str] | None = None,
) -> int:
    """Serve ACP until stdin closes. Stdout is reserved for the protocol: the real fd 1 is
    kept for the writer and fd 1 itself now points at stderr, so a stray print from any
    library lands in the log instead of corrupting the stream. Stdin likewise: commands
    we start must never eat protocol input. With `warm_environ` (a cold start of
    `hermes-acp --stdio`), a warm server for it is started once the hello is answered
    (hermes_acp/warm/) when the input goes on past it, so that the next spawn is served
    by a fork of it."""
    from hermes_acp.startup import pause_collector

    pause_collector()  # until the warm-up has imported what a model call needs (collector.py)
    if os.isatty(0):
        sys.stderr.write(TERMINAL_HINT + "\n")
        sys.stderr.flush()
    try:
        protocol_in = os.dup(0)
    except OSError:  # stdin closed (`<&-`): no input, as from /dev/null
        protocol_in = os.open(os.devnull, os.O_RDONLY)
    protocol_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)

    problem = config_problem()
    if problem is not None:  # serving would only fail every session: say why, now
        sys.stderr.write(f"hermes-acp: {problem}\nFix the setting (or run `hermes-acp setup`) and restart.\n")
        sys.stderr.flush()
        return 2
    tracer = None
    if trace:
        from hermes_acp.logs import TraceWriter

        tracer = TraceWriter(trace)
    from hermes_acp.startup import answer_first_initialize, input_ends_next

    # The first `initialize` is answered before asyncio, the SDK and even logging are imported.
    handover = answer_first_initialize(protocol_in, protocol_out, tracer, meanwhile=_import_server)
    ends = input_ends_next(protocol_in, handover, _import_server)
    if not ends:
        handover.answer_session_new(protocol_out, tracer)  # an editor's session/new, if already there
        if warm_environ is not None and handover.hello is not None:
            # After those answers, for the next spawn; not for a client that only wanted the hello.
            from hermes_acp.warm.launch import start_server

            start_server(warm_environ)
        handover.join()
    from hermes_acp.logs import setup_logging

    setup_logging(log_level or os.environ.get("HERMES_ACP_LOG_LEVEL") or "info", log_file)
    handover.report()
    if ends:  # only the hello was wanted: nothing to serve, store or wait for
        import logging

        logging.getLogger("hermes_acp.server").info("input closed; shutting down")
        if tracer is not None:
            tracer.close()
        logging.shutdown()
        _exit_now()  # its exit handlers too: a warm child reports its exit code there
    import asyncio

    try:
        # The server's own coroutine is the main task, so a message wakes no frame of
        # this module (a prompt's path stays in the modules that serve it).
        with asyncio.Runner() as runner:
            server = runner.run(_start_server(protocol_in, protocol_out, tracer, handover))
            runner.run(server.serve())
    except KeyboardInterrupt:
        pass
    finally:
        if tracer is not None:
            tracer.close()
    # Everything is flushed and closed by now; tearing down the interpreter's modules
    # would only make the editor wait most of a second longer for the exit.
    import logging

    logging.shutdown()
    _exit_now()


def _exit_now() -> NoReturn:
    """Exit at once, skipping the interpreter's teardown but not the exit handlers: they
    remove what the process leaves on disk (the sandbox's mount point and launcher folder,
    one each per process, which otherwise piled up in /tmp by the thousand)."""
    import atexit

    atexit._run_exitfuncs()  # what sys.exit would run, without the module teardown
    sys.stderr.flush()
    os._exit(0)


def _import_server() -> None:
    """What the server imports, run while the first line is awaited (early_hello.py). A
    failure is left for the server's own imports to raise."""
    with contextlib.suppress(Exception):
        import asyncio  # noqa: F401

        import hermes_acp.logs
        from hermes_acp.startup import defer_package_init, open_fd_transport  # noqa: F401

        defer_package_init()
        import hermes_acp.server  # noqa: F401


async def _start_server(read_fd: int, write_fd: int, tracer: Any, handover: Handover) -> Any:
    """The server on these descriptors, with SIGTERM and SIGHUP wired to a shutdown,
    taking over from the early start: its unread input, hello and signals."""
    import asyncio

    from hermes_acp.startup import SHUTDOWN_SIGNALS, defer_package_init, open_fd_transport

    defer_package_init()  # a later initialize is answered before the SDK's schema is imported
    from hermes_acp.server import AcpServer

    transport = await open_fd_transport(
        read_fd, write_fd, tracer=tracer, unread=handover.unread, ended=handover.ended
    )
    server = AcpServer(transport)
    if handover.hello is not None:  # answered already: what the server does after its own answer
        server.greeted(handover.hello)
        server.startup.greeted()
    if handover.session is not None:  # answered already: built before anything else is served
        server.adopt(handover.session)
    transport.settle = lambda: server.finish_in_flight(end_of_input_seconds())
    loop = asyncio.get_running_loop()
    signals = 0

    def shut_down() -> None:
        # A service manager or a closed terminal: the shutdown end of input runs, except
        # that turns are cancelled (their commands killed) rather than awaited. They
        # still answer `cancelled` and are stored; a second signal stops waiting for that.
        nonlocal signals
        signals += 1
        server.cancel_turns()
        transport.stop(settle=signals == 1)

    for signum in SHUTDOWN_SIGNALS:
        loop.add_signal_handler(signum, shut_down)
    for _ in range(handover.signals):  # counted until the handlers above took over
        shut_down()
    return server


def config_problem() -> str | None:
    """What is wrong with the configuration (config.toml and HERMES_ACP_* variables), if anything."""
    from hermes_core.config_plain import plainly_valid

    if plainly_valid():  # no need for the settings model (~50 ms of pydantic) before the answer
        return None
    from hermes_core.config import ConfigError, load_settings

    try:
        load_settings()
    except ConfigError as exc:
        return f"hermes-acp is misconfigured: {exc}"
    return None


def end_of_input_seconds() -> float:
    """The `end_of_input_seconds` setting (its default when the config cannot be read)."""
    from hermes_core.config import ConfigError, Settings, load_settings

    try:
        return load_settings().end_of_input_seconds
    except (ConfigError, ValueError):
        return Settings.model_fields["end_of_input_seconds"].default


# -- hermes-acp --check ----------------------------------------------------------------------------


def run_check(out: TextIO) -> int:
    """A readable report: config, credentials, endpoint, a one-token request. 0 when all pass."""
    import asyncio

    return asyncio.run(_check(out))


async def _check(out: TextIO) -> int:
    from hermes_core.config import ConfigError, load_settings

    def line(ok: bool | None, label: str, detail: str) -> None:
        mark = {True: "ok  ", False: "FAIL", None: "--  "}[ok]
        out.write(f"[{mark}] {label}: {detail}\n")
        out.flush()

    try:
        settings = load_settings()
    except ConfigError as exc:
        line(False, "configuration", str(exc))
        return 1
    config = settings.config_path
    if config.is_file():
        line(True, "config file", str(config))
    else:
        line(None, "config file", f"{config} not found; using the environment")
    from hermes_core.providers.resolve import build_chain, has_api_key, has_credentials

    line(True, "provider", f"{settings.provider}, model {settings.model}")
    from hermes_core.sandbox.bwrap import check_line

    line(*check_line(settings))
    from hermes_acp.warm.control import check_line as warm_line

    line(*warm_line(os.environ))
    if not has_credentials(settings):
        line(False, "credentials", "no API key: run `hermes-acp setup`, or set OPENAI_API_KEY etc.")
        return 1
    if has_api_key(settings) or settings.provider == "bedrock":
        line(True, "credentials", "present")
    else:  # a custom or local endpoint, called without a key: the probe below tells if it takes that
        line(None, "credentials", f"no API key; {settings.base_url} is called without one")
    try:
        provider = build_chain(settings)[0]
    except Exception as exc:
        line(False, "provider", f"cannot be built: {exc}")
        return 1
    try:
        return await _probe(provider, line, settings)
    finally:
        with contextlib.suppress(Exception):
            await provider.aclose()


async def _probe(provider: Any, line: Any, settings: Any) -> int:
    import asyncio
    import time

    from hermes_core.messages import Message
    from hermes_core.providers.base import ErrorKind, ModelRequest, ModelResponse, ProviderError

    try:
        models = await asyncio.wait_for(provider.list_models(), 20)
        line(True, "endpoint", f"reachable ({len(models)} models listed)")
        from hermes_core.providers.model_list import review_model_list

        if problem := review_model_list(settings, models):
            line(False, "model", problem)
            return 1
    except ProviderError as exc:
        if exc.kind in (ErrorKind.TRANSIENT, ErrorKind.STALE):
            line(False, "endpoint", f"unreachable: {exc}")
            return 1
        if exc.kind is ErrorKind.AUTH:
            line(False, "endpoint", f"the API key was rejected: {exc}")
            return 1
        line(True, "endpoint", f"reachable (no model list: {exc})")
    except Exception as exc:
        line(False, "endpoint", f"unreachable: {exc}")
        return 1
    request = ModelRequest(
        system="You are a connectivity check.",
        messages=[Message(role="user", content="Reply with the single word OK.")],
        max_output_tokens=1,
    )
    started = time.monotonic()
    try:
        response = None
        async for item in provider.stream(request):
            if isinstance(item, ModelResponse):
                response = item
    except ProviderError as exc:
        line(False, "model", f"{provider.model} failed: {exc}")
        return 1
    answer = (response.text if response else "").strip() or "(no text)"
    line(True, "model", f"{provider.model} answered in {time.monotonic() - started:.2f} s: {answer!r}")
    return 0
