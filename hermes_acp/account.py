"""`hermes-acp setup` and `hermes-acp logout`: the provider, API key and model in
config.toml, asked for on the terminal, and the keys removed again."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TextIO

DEFAULT_MODELS = {
    "openai": "gpt-4.1",
    "anthropic": "claude-sonnet-4-5",
    "openrouter": "anthropic/claude-sonnet-4.5",
}
KEY_FIELDS = {
    "openai": "openai_api_key",
    "anthropic": "anthropic_api_key",
    "openrouter": "openrouter_api_key",
    "custom": "api_key",
}


def run_setup(stdin: TextIO, out: TextIO) -> int:
    """Ask for provider, key and model on the terminal; write config.toml."""
    from hermes_core.config import ConfigError, write_config

    home = Path(os.environ.get("HERMES_ACP_HOME") or "~/.hermes-acp").expanduser()
    values = _existing_config(home / "config.toml", out)
    out.write(f"hermes-acp setup — writes {home / 'config.toml'}\n\n")
    try:
        providers = ["openai", "anthropic", "openrouter", "custom"]
        provider = _choose(stdin, out, "Provider", providers, values.get("provider", "openai"))
        values["provider"] = provider
        if provider == "custom":
            label = "Base URL of the OpenAI-compatible endpoint"
            values["base_url"] = _ask(stdin, out, label, values.get("base_url"))
        key_field = KEY_FIELDS[provider]
        keep = " (leave empty to keep the current one)" if values.get(key_field) else ""
        key = _ask_secret(stdin, out, f"API key{keep}")
        if key:
            values[key_field] = key
        elif not values.get(key_field) and provider != "custom":
            out.write("No API key given; set it later in the environment or run setup again.\n")
        current = values.get("model") if values.get("provider") == provider else None
        listed = _endpoint_models(home, values, out)
        values["model"] = _ask_model(stdin, out, listed, current, DEFAULT_MODELS.get(provider) or "")
    except EOFError:
        out.write("\nSetup aborted: input ended before all answers were given.\n")
        return 1
    values = {k: v for k, v in values.items() if v not in (None, "")}
    try:
        path = write_config(home, values)
    except (ConfigError, ValueError) as exc:
        out.write(f"Not written: {exc}\n")
        return 1
    out.write(f"\nWrote {path}. Check it with `hermes-acp --check`.\n")
    return 0


SHOWN_MODELS = 40  # an endpoint may list hundreds: the first ones, and any name may be typed


def _endpoint_models(home: Path, values: dict[str, Any], out: TextIO) -> list[str]:
    """The models the endpoint just configured lists ([] when it lists none or cannot
    be reached): asked with the answers given so far and the environment's settings."""
    import asyncio

    from hermes_acp.session.options import list_endpoint_models
    from hermes_core.config import ConfigError, load_settings

    answers = {k: v for k, v in values.items() if k != "model" and v not in (None, "")}
    try:
        settings = load_settings({**os.environ, "HERMES_ACP_HOME": str(home)}, overrides=answers)
    except ConfigError:
        return []
    out.write("Asking the endpoint for its models…\n")
    out.flush()
    return asyncio.run(list_endpoint_models(settings))


def _ask_model(stdin: TextIO, out: TextIO, listed: list[str], current: str | None, usual: str) -> str:
    """The model, picked by number from the endpoint's list or typed by name. Offered
    first: the model configured now, else the provider's usual one if listed, else the
    first listed."""
    if not listed:
        return _ask(stdin, out, "Model", current) or usual
    default = current or (usual if usual in listed else listed[0])
    out.write(f"The endpoint lists {len(listed)} models:\n")
    for number, model in enumerate(listed[:SHOWN_MODELS], 1):
        out.write(f"  {number:>3}. {model}\n")
    if len(listed) > SHOWN_MODELS:
        out.write(f"  … and {len(listed) - SHOWN_MODELS} more (type any name)\n")
    answer = _ask(stdin, out, "Model (a number or a name)", default)
    if answer.isdigit() and 1 <= int(answer) <= min(len(listed), SHOWN_MODELS):
        return listed[int(answer) - 1]
    if answer not in listed:
        out.write(f"Note: the endpoint does not list {answer!r}; `hermes-acp --check` will say so.\n")
    return answer


def _existing_config(path: Path, out: TextIO) -> dict[str, Any]:
    import tomllib

    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        out.write(f"(ignoring the unreadable existing {path}: {exc})\n")
        return {}


def _read_line(stdin: TextIO) -> str:
    line = stdin.readline()
    if not line:
        raise EOFError
    return line.strip()


def _ask(stdin: TextIO, out: TextIO, label: str, default: str | None) -> str:
    out.write(f"{label}{f' [{default}]' if default else ''}: ")
    out.flush()
    return _read_line(stdin) or (default or "")


def _choose(stdin: TextIO, out: TextIO, label: str, choices: list[str], default: str) -> str:
    while True:
        answer = _ask(stdin, out, f"{label} ({' / '.join(choices)})", default)
        if answer in choices:
            return answer
        out.write(f"Please answer one of: {', '.join(choices)}\n")


def _ask_secret(stdin: TextIO, out: TextIO, label: str) -> str:
    if stdin.isatty():
        import getpass

        return getpass.getpass(f"{label}: ", stream=out).strip()
    out.write(f"{label}: ")
    out.flush()
    return _read_line(stdin)


# -- hermes-acp logout ------------------------------------------------------------------------------


def run_logout(out: TextIO) -> int:
    """Remove the API keys from config.toml (as the ACP `logout` method does); say which
    went, and which keys the environment still holds (those are the shell's to unset)."""
    import re

    from hermes_core.credentials import forget_stored_keys

    home = Path(os.environ.get("HERMES_ACP_HOME") or "~/.hermes-acp").expanduser()
    try:
        removed = forget_stored_keys(home)
    except ValueError as exc:
        out.write(f"Nothing removed: {exc}\n")
        return 1
    config = home / "config.toml"
    if removed:
        out.write(f"Removed {', '.join(removed)} from {config}.\n")
    else:
        out.write(f"No API key stored in {config}; nothing to remove.\n")
    key_variable = re.compile(r"(OPENAI|ANTHROPIC|OPENROUTER)_API_KEY(_\d+)?|HERMES_ACP_\w*KEY\w*")
    left = sorted(name for name, value in os.environ.items() if value and key_variable.fullmatch(name))
    if left:
        out.write(f"Still set in the environment (unset them to log out fully): {', '.join(left)}\n")
    return 0
