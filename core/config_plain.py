"""Whether the settings are plainly valid, read without pydantic.

`hermes-acp --stdio` refuses to start on a bad configuration, and says why. The full
check (core/config.py's `Settings`) builds pydantic models: ~50 ms before the answer to
`initialize`. `plainly_valid` reads config.toml and the environment the way
`load_settings` does and accepts only values that the model takes as they are: known
keys, the exact type, a literal from the list, a number inside its bound, and from the
environment only digits (and `true`/`false`) where a number (or a flag) goes. Anything
else, a table-valued key (`fallback`, `prices`, `context_windows`) among it, returns
False and start-up runs the full check, which says what is wrong as it always has.
So this never decides differently, only sooner; `tests/test_config_plain.py` holds both
to the same verdicts and this table to the model's fields.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

ENV_PREFIX = "HERMES_ACP_"

# The settings model's defaults that a session's first answer shows (startup/early_session.py
# reads them plainly; config.Settings takes its defaults from here, so the two agree).
DEFAULT_PROVIDER: Final = "openai"
DEFAULT_MODEL: Final = "gpt-4.1"
DEFAULT_MODE: Final = "ask"
DEFAULT_AUTO_COMPACT: Final = True

# The providers' own variables, mapped onto settings keys.
SDK_ENV = {
    "OPENAI_API_KEY": "openai_api_key",
    "OPENAI_BASE_URL": "openai_base_url",
    "ANTHROPIC_API_KEY": "anthropic_api_key",
    "ANTHROPIC_BASE_URL": "anthropic_base_url",
    "OPENROUTER_API_KEY": "openrouter_api_key",
}
LIST_KEYS = frozenset({"models", "api_keys", "sandbox_caches", "sandbox_writable", "sandbox_sockets"})

PROVIDERS = ("openai", "openai-responses", "anthropic", "openrouter", "bedrock", "custom")
API_MODES = ("chat_completions", "anthropic_messages", "responses", "bedrock_converse")
EFFORTS = ("low", "medium", "high")
MODES = ("ask", "accept_edits", "plan", "auto", "yolo")
SANDBOXES = ("workspace-write", "read-only", "off")
SWITCH = ("on", "off")
LOG_LEVELS = ("debug", "info", "warning", "error")

_INT_TEXT = re.compile(r"0|[1-9][0-9]{0,8}")
_FLOAT_TEXT = re.compile(r"(0|[1-9][0-9]{0,8})(\.[0-9]{1,9})?")
_FLAG_TEXT = frozenset({"true", "false"})


class Rule:
    """Whether a value is one the model takes as it is (`rule(value)`), and that value as the
    model holds it (`rule.typed(value)`: "40" from the environment is 40, a whole number of
    seconds is a float)."""

    __slots__ = ("accepts", "typed")

    def __init__(
        self, accepts: Callable[[Any], bool], typed: Callable[[Any], Any] = lambda value: value
    ) -> None:
        self.accepts = accepts
        self.typed = typed

    def __call__(self, value: Any) -> bool:
        return self.accepts(value)


def _text(value: Any) -> bool:
    return type(value) is str


def _texts(value: Any) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


def _one_of(choices: tuple[str, ...]) -> Rule:
    return Rule(lambda value: type(value) is str and value in choices)


def _integer(low: int) -> Rule:
    def check(value: Any) -> bool:
        if type(value) is str and _INT_TEXT.fullmatch(value):
            value = int(value)
        return type(value) is int and value >= low

    return Rule(check, int)


def _number(low: float, *, inclusive: bool, high: float | None = None) -> Rule:
    def check(value: Any) -> bool:
        if type(value) is str and _FLOAT_TEXT.fullmatch(value):
            value = float(value)
        if type(value) not in (int, float) or not math.isfinite(value):
            return False
        above = value >= low if inclusive else value > low
        return above and (high is None or value <= high)

    return Rule(check, float)


def _flag(value: Any) -> bool:
    return type(value) is bool or (type(value) is str and value in _FLAG_TEXT)


TEXT = Rule(_text)
TEXTS = Rule(_texts, list)  # a list of its own, as the model makes one
FLAG = Rule(_flag, lambda value: value if type(value) is bool else value == "true")


# Every field of hermes_core.config.Settings but `home` (always the HERMES_ACP_HOME directory) and
# the table-valued ones, which go to the full check.
RULES: dict[str, Rule] = {
    "provider": _one_of(PROVIDERS),
    "model": TEXT,
    "api_mode": _one_of(API_MODES),
    "base_url": TEXT,
    "api_key": TEXT,
    "api_keys": TEXTS,
    "openai_api_key": TEXT,
    "openai_base_url": TEXT,
    "anthropic_api_key": TEXT,
    "anthropic_base_url": TEXT,
    "openrouter_api_key": TEXT,
    "bedrock_region": TEXT,
    "bedrock_profile": TEXT,
    "models": TEXTS,
    "reasoning_effort": _one_of(EFFORTS),
    "max_output_tokens": _integer(1),
    "max_iterations": _integer(1),
    "subagent_max_iterations": _integer(1),
    "max_subagents": _integer(0),
    "max_retries": _integer(0),
    "retry_base_seconds": _number(0, inclusive=True),
    "retry_cap_seconds": _number(0, inclusive=True),
    "stale_stream_seconds": _number(0, inclusive=False),
    "request_timeout_seconds": _number(0, inclusive=False),
    "compression_threshold": _number(0, inclusive=False, high=1),
    "compression_keep_last": _integer(2),
    "auto_compact": FLAG,
    "checkpoints": FLAG,
    "checkpoint_max_files": _integer(1),
    "auxiliary_model": TEXT,
    "default_mode": _one_of(MODES),
    "sandbox": _one_of(SANDBOXES),
    "sandbox_network": _one_of(SWITCH),
    "sandbox_caches": TEXTS,
    "sandbox_writable": TEXTS,
    "sandbox_ssh_agent": FLAG,
    "sandbox_sockets": TEXTS,
    "sandbox_max_processes": _integer(16),
    "sandbox_tmp_mb": _integer(1),
    "sandbox_memory_mb": _integer(0),
    "mcp_connect_timeout": _number(0, inclusive=False, high=600),
    "sandbox_bwrap": TEXT,
    "command_timeout_seconds": _number(0, inclusive=False),
    "end_of_input_seconds": _number(0, inclusive=False),
    "log_level": _one_of(LOG_LEVELS),
}
TABLE_KEYS = frozenset({"fallback", "prices", "context_windows", "permissions", "hooks"})
FIELDS = frozenset(RULES) | TABLE_KEYS | {"home"}


def env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    """The settings the environment gives: HERMES_ACP_<KEY> and the providers' variables."""
    out: dict[str, Any] = {}
    for env_name, key in SDK_ENV.items():
        if environ.get(env_name):
            out[key] = environ[env_name]
    for env_name, value in environ.items():
        if not env_name.startswith(ENV_PREFIX) or value == "":
            continue
        key = env_name[len(ENV_PREFIX) :].lower()
        if key not in FIELDS:
            continue  # other HERMES_ACP_* variables (test hooks, log file) are not settings
        out[key] = [v.strip() for v in value.split(",") if v.strip()] if key in LIST_KEYS else value
    return out


def plainly_valid(environ: Mapping[str, str] | None = None) -> bool:
    """True when `load_settings(environ)` surely succeeds; False when only it can tell."""
    return plain_values(environ) is not None


def plain_values(environ: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The settings `load_settings(environ)` reads (config.toml, then the environment; not
    `home`, no defaults), typed as the model holds them (`typed_values`), when they are
    plainly valid; None when only the full check can tell."""
    environ = os.environ if environ is None else environ
    home = os.path.expanduser(environ.get(ENV_PREFIX + "HOME") or "~/.hermes-acp")
    values: dict[str, Any] = {}
    config_path = os.path.join(home, "config.toml")
    try:
        if os.path.isfile(config_path):
            import tomllib

            with open(config_path, encoding="utf-8") as file:
                values.update(tomllib.loads(file.read()))
    except Exception:  # unreadable or not TOML: the full check says which
        return None
    if not values.keys() <= FIELDS:
        return None
    values.update(env_overrides(environ))
    return typed_values(values)


def typed_values(values: Mapping[str, Any]) -> dict[str, Any] | None:
    """The settings in `values` (the file's, then the environment's) as the model would hold
    them after validating, when every one is plainly valid; None when only the model can tell.
    `home` is left out: it is always the HERMES_ACP_HOME directory."""
    typed: dict[str, Any] = {}
    for key, value in values.items():
        if key == "home":
            continue
        rule = RULES.get(key)
        if rule is None or not rule(value):
            return None
        typed[key] = rule.typed(value)
    return typed
