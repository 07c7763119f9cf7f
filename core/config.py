"""Settings: `config.toml` under HERMES_ACP_HOME, overlaid by the environment.

Every key of the file has an environment twin, `HERMES_ACP_<KEY>` (upper case); the
providers' own variables (OPENAI_API_KEY, ANTHROPIC_BASE_URL, ...) are read as well.
The environment wins over the file. An unknown key or a bad value raises
ConfigError naming it.

The models build their validators on first use (`defer_build`): a configuration that
`core/config_plain.py` reads as plainly valid (the usual one) becomes `Settings` without
them, as the values validation would have produced (`model_construct`), so a session's
start does not pay ~20-30 ms of pydantic schema building; anything else is validated in
full, with the same messages.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hermes_core.config_plain import (
    DEFAULT_AUTO_COMPACT,
    DEFAULT_MODE,
    DEFAULT_MODEL,
    DEFAULT_PROVIDER,
    ENV_PREFIX,
    env_overrides,
    typed_values,
)
from hermes_core.errors import HermesError

ProviderName = Literal["openai", "openai-responses", "anthropic", "openrouter", "bedrock", "custom"]
ApiMode = Literal["chat_completions", "anthropic_messages", "responses", "bedrock_converse"]


class ConfigError(HermesError):
    pass


class Price(BaseModel):
    """US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None


class FallbackEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    provider: ProviderName
    model: str
    base_url: str | None = None
    api_key_env: str | None = None  # the variable holding this endpoint's key
    api_mode: ApiMode | None = None


def _no_items() -> list[Any]:
    # Not `list`: `model_construct` asks each default factory for its signature, and a
    # builtin's is parsed from its text signature (tokenize's regexes compiled on the first,
    # ~0.15 ms each after; `load_settings` fills ~16 such defaults on the event loop).
    return []


def _no_entries() -> dict[str, Any]:
    return {}


class PermissionTable(BaseModel):
    """`[permissions]`: rules in Claude Code's syntax (core/policy/permission_rules.py)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    allow: list[str] = Field(default_factory=_no_items)
    ask: list[str] = Field(default_factory=_no_items)
    deny: list[str] = Field(default_factory=_no_items)

    def as_table(self) -> dict[str, list[str]]:
        """What `model_dump()` gives, without building the model's serializer: a session's
        rules are read from it at every first session/new."""
        return {"allow": list(self.allow), "ask": list(self.ask), "deny": list(self.deny)}


class HookEntry(BaseModel):
    """One command hook (core/policy/hooks.py)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    command: str
    matcher: str | None = None  # a permission rule; tool hooks only
    timeout: float = Field(default=60.0, gt=0)
    unconfined: bool = False  # run outside the sandbox (it then must not run workspace files)


class HookTable(BaseModel):
    """`[[hooks.<event>]]`: command hooks, the user's own code."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    session_start: list[HookEntry] = Field(default_factory=_no_items)
    prompt_submit: list[HookEntry] = Field(default_factory=_no_items)
    pre_tool: list[HookEntry] = Field(default_factory=_no_items)
    post_tool: list[HookEntry] = Field(default_factory=_no_items)
    stop: list[HookEntry] = Field(default_factory=_no_items)

    def as_table(self) -> dict[str, list[dict[str, Any]]]:
        """What `model_dump()` gives, without building the model's serializer."""
        return {
            event: [
                {"command": h.command, "matcher": h.matcher, "timeout": h.timeout, "unconfined": h.unconfined}
                for h in getattr(self, event)
            ]
            for event in HOOK_EVENTS
        }


HOOK_EVENTS = ("session_start", "prompt_submit", "pre_tool", "post_tool", "stop")


def _no_permissions() -> PermissionTable:
    # The empty tables are what validation would give: constructing them builds no
    # validator (the first model built costs ~40 ms: pydantic's plugin scan).
    return PermissionTable.model_construct()


def _no_hooks() -> HookTable:
    return HookTable.model_construct()


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, defer_build=True)

    home: Path = Field(default_factory=lambda: Path("~/.hermes-acp").expanduser())
    provider: ProviderName = DEFAULT_PROVIDER
    model: str = DEFAULT_MODEL
    api_mode: ApiMode | None = None
    base_url: str | None = None  # for "custom" (and an override for any provider)
    api_key: str | None = None  # for "custom"
    # More keys for the configured provider, tried in turn when one is refused (429/402/403);
    # OPENAI_API_KEY_1, _2, ... (and the other providers' numbered variables) add to these.
    api_keys: list[str] = Field(default_factory=_no_items)

    openai_api_key: str | None = None
    openai_base_url: str | None = None
    anthropic_api_key: str | None = None
    anthropic_base_url: str | None = None
    openrouter_api_key: str | None = None
    # Bedrock: otherwise AWS_REGION / AWS_PROFILE and the rest of the AWS credential chain.
    bedrock_region: str | None = None
    bedrock_profile: str | None = None

    models: list[str] = Field(default_factory=_no_items)  # offered in the editor's model picker
    fallback: list[FallbackEntry] = Field(default_factory=_no_items)
    prices: dict[str, Price] = Field(default_factory=_no_entries)
    context_windows: dict[str, int] = Field(default_factory=_no_entries)
    reasoning_effort: Literal["low", "medium", "high"] | None = None
    max_output_tokens: int | None = Field(default=None, gt=0)

    max_iterations: int = Field(default=90, gt=0)  # model calls per turn
    subagent_max_iterations: int = Field(default=30, gt=0)  # per child, within the turn's budget
    max_subagents: int = Field(default=3, ge=0)  # children one delegate_task call may start; 0: none
    max_retries: int = Field(default=3, ge=0)
    retry_base_seconds: float = Field(default=1.0, ge=0)
    retry_cap_seconds: float = Field(default=30.0, ge=0)
    stale_stream_seconds: float = Field(default=90.0, gt=0)
    request_timeout_seconds: float = Field(default=600.0, gt=0)

    compression_threshold: float = Field(default=0.5, gt=0, le=1)
    compression_keep_last: int = Field(default=20, ge=2)
    auto_compact: bool = (
        DEFAULT_AUTO_COMPACT  # off: compress only when the provider says the context overflowed
    )
    auxiliary_model: str | None = None  # compression summaries; the session's model when unset

    default_mode: Literal["ask", "accept_edits", "plan", "auto", "yolo"] = DEFAULT_MODE
    # Commands run in a kernel sandbox (core/sandbox.py; README "Safety").
    sandbox: Literal["workspace-write", "read-only", "off"] = "workspace-write"
    sandbox_network: Literal["on", "off"] = "on"
    # toolchain caches seen as private overlays (README "Sandbox")
    sandbox_caches: list[str] = Field(default_factory=lambda: list(_default_caches()))
    sandbox_writable: list[str] = Field(default_factory=_no_items)  # really writable: changes carry out
    sandbox_ssh_agent: bool = False  # let sandboxed commands use the ssh agent (sign with your keys)
    sandbox_sockets: list[str] = Field(default_factory=_no_items)  # host sockets under /run kept reachable
    sandbox_max_processes: int = Field(default=2048, ge=16)  # per command, threads included
    sandbox_tmp_mb: int = Field(default=1024, ge=1)  # the size of a command's private TMPDIR
    sandbox_memory_mb: int = Field(default=0, ge=0)  # a session's commands together; 0: half the RAM
    # How long a session's start waits for the editor's MCP servers, the slowest at most (an
    # `npx` server downloading itself, a loaded machine); the ones not connected by then are left out.
    mcp_connect_timeout: float = Field(default=10.0, gt=0, le=600)
    sandbox_bwrap: str | None = None  # a bwrap other than the bundled one
    command_timeout_seconds: float = Field(default=120.0, gt=0)
    # how long a prompt still running when stdin ends (a piped script) may take to finish
    end_of_input_seconds: float = Field(default=600.0, gt=0)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    checkpoints: bool = True  # snapshot the working directory before a turn changes it (/rewind)
    # a tree with more files is not snapshotted (its listing is stopped there)
    checkpoint_max_files: int = Field(default=200_000, ge=1)
    permissions: PermissionTable = Field(default_factory=_no_permissions)
    hooks: HookTable = Field(default_factory=_no_hooks)

    @property
    def config_path(self) -> Path:
        return self.home / "config.toml"

    @property
    def db_path(self) -> Path:
        return self.home / "sessions.db"

    @property
    def memory_dir(self) -> Path:
        return self.home / "memory"


def _default_caches() -> tuple[str, ...]:
    from hermes_core.sandbox.caches import DEFAULT_CACHES

    return DEFAULT_CACHES


def load_settings(
    environ: Mapping[str, str] | None = None, *, overrides: Mapping[str, Any] | None = None
) -> Settings:
    """Settings from the config file, the environment, then explicit overrides."""
    environ = os.environ if environ is None else environ
    home = Path(environ.get(ENV_PREFIX + "HOME") or "~/.hermes-acp").expanduser()
    values: dict[str, Any] = {}
    config_path = home / "config.toml"
    if config_path.is_file():
        try:
            values.update(tomllib.loads(config_path.read_text(encoding="utf-8")))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{config_path}: not valid TOML: {exc}") from exc
        unknown = sorted(set(values) - set(Settings.model_fields))
        if unknown:
            raise ConfigError(f"{config_path}: unknown key {', '.join(map(repr, unknown))}")
    values.update(env_overrides(environ))
    values["home"] = home
    if overrides:
        values.update(overrides)
    typed = typed_values(values) if isinstance(values["home"], Path) else None
    if typed is not None:  # what validation would give: build no validator for it
        return Settings.model_construct(home=values["home"], **typed)
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, config_path)) from exc


def _describe(exc: ValidationError, config_path: Path) -> str:
    problems = []
    for error in exc.errors():
        key = ".".join(str(p) for p in error["loc"])
        top = str(error["loc"][0]) if error["loc"] else key
        where = f"{ENV_PREFIX}{top.upper()} or {config_path.name}"
        problems.append(f"{key}: {error['msg']} (got {error.get('input')!r}; set in {where})")
    return "invalid settings: " + "; ".join(problems)


def write_config(home: Path, values: Mapping[str, Any]) -> Path:
    """Write config.toml (used by `hermes-acp setup`); validates before writing."""
    import tomli_w

    Settings.model_validate({**values, "home": home})
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(tomli_w.dumps(dict(values)), encoding="utf-8")
    path.chmod(0o600)
    return path
