"""The endpoint's model list, kept under the home between runs, and what it says about the
configured model.

A fresh session's model picker shows the list an earlier run fetched (until it is older
than `TTL_SECONDS`) instead of waiting for the endpoint; `hermes-acp --check` says when
the configured model is not among the models the endpoint lists.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # not imported at run time: the early session/new answer reads the cache plainly
    from hermes_core.config import Settings

log = logging.getLogger(__name__)

FILE_NAME = "model_lists.json"
_CROSS_REGION = re.compile(r"^(?:us|eu|apac|global|jp|au|ca|us-gov)\.")
TTL_SECONDS = 24 * 3600.0


class Endpoint(Protocol):
    """What names an endpoint's list: the settings, or their plain reading before the
    server exists (hermes_acp/startup/early_session.py)."""

    @property
    def home(self) -> Path: ...
    @property
    def provider(self) -> str: ...
    @property
    def base_url(self) -> str | None: ...
    @property
    def openai_base_url(self) -> str | None: ...
    @property
    def anthropic_base_url(self) -> str | None: ...
    @property
    def bedrock_region(self) -> str | None: ...


def endpoint_key(settings: Endpoint) -> str:
    """Which endpoint a list belongs to: the provider and every base URL that can point it."""
    parts = (
        settings.provider,
        settings.base_url or "",
        settings.openai_base_url or "",
        settings.anthropic_base_url or "",
        settings.bedrock_region or "",
    )
    return "|".join(parts)


def _path(settings: Endpoint) -> Path:
    return settings.home / "cache" / FILE_NAME


def _read(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.info("ignoring the model-list cache %s: %s", path, exc)
        return {}
    return data if isinstance(data, dict) else {}


def cached_models(settings: Endpoint, *, now: float | None = None) -> list[str]:
    """The endpoint's model list from an earlier run, or [] when none is fresh."""
    entry = _read(_path(settings)).get(endpoint_key(settings))
    if not isinstance(entry, dict):
        return []
    fetched = entry.get("fetched_at")
    models = entry.get("models")
    if not isinstance(fetched, (int, float)) or not isinstance(models, list):
        return []
    if (time.time() if now is None else now) - fetched > TTL_SECONDS:
        return []
    return [m for m in models if isinstance(m, str) and m]


def remember_models(settings: Settings, models: list[str]) -> None:
    """Keep a fetched list for later runs (an empty list is not worth keeping)."""
    if not models:
        return
    path = _path(settings)
    data = _read(path)
    data[endpoint_key(settings)] = {"models": list(models), "fetched_at": time.time()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        import tempfile

        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".model_lists.")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        Path(temp).replace(path)
    except OSError as exc:  # a cache: the next run fetches again
        log.info("could not keep the model list in %s: %s", path, exc)


def model_problem(model: str, listed: list[str]) -> str | None:
    """Why `model` looks wrong for an endpoint that lists `listed`, or None when it is
    listed (or the endpoint gave no list to judge by)."""
    if not listed or model in listed or model.startswith("arn:"):  # ARNs: not in any list
        return None
    # Bedrock's cross-region inference profiles name a listed model behind a region prefix.
    wanted = _CROSS_REGION.sub("", model.lower())
    # Ollama-style "model:tag" spellings of a listed name.
    if any(wanted == m.lower() or wanted == m.lower().split(":", 1)[0] for m in listed):
        return None
    close = sorted(m for m in listed if wanted.rsplit("/", 1)[-1].split(":", 1)[0] in m.lower())[:5]
    hint = f"; similar: {', '.join(close)}" if close else ""
    return f"model {model!r} is not among the {len(listed)} models the endpoint lists{hint}"


def review_model_list(settings: Settings, listed: list[str]) -> str | None:
    """For `--check`: keep the endpoint's list for the model picker, and say what is wrong
    with the configured model (None when nothing is)."""
    remember_models(settings, listed)
    return model_problem(settings.model, listed)
