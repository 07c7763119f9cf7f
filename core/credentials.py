"""Forgetting the API keys `hermes-acp setup` wrote (the ACP `logout` method)."""

from __future__ import annotations

import tomllib
from pathlib import Path

# The config.toml keys that hold secrets; everything else in the file stays.
KEY_SETTINGS = ("api_key", "api_keys", "openai_api_key", "anthropic_api_key", "openrouter_api_key")


def forget_stored_keys(home: Path) -> list[str]:
    """Remove the API keys from `home/config.toml`; the names of the keys removed.
    ValueError when the file is not valid TOML (it is left as it is)."""
    import tomli_w

    path = Path(home) / "config.toml"
    if not path.is_file():
        return []
    try:
        values = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML: {exc}") from exc
    removed = [key for key in KEY_SETTINGS if key in values]
    if removed:
        kept = {key: value for key, value in values.items() if key not in KEY_SETTINGS}
        path.write_text(tomli_w.dumps(kept), encoding="utf-8")
        path.chmod(0o600)
    return removed
