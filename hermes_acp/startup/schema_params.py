"""Request params validated by the SDK's schema models: the authority behind the plain
readers (plain_params.py), for every request they decline. A bad field is a -32602 that
names it, in the words pydantic gives.

The schema (`acp.schema`, 280 models) is looked up by name when a request needs it, after
the dispatch has imported it off the event loop (`Warmup.schema_ready`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from acp.exceptions import RequestError
from pydantic import BaseModel, ValidationError

from hermes_acp.session.errors import INVALID_PARAMS

Params = dict[str, Any]
# A schema model's name, a model (anything with `model_validate`), or a function of the
# params that chooses one of those.
Model = str | type[Any]
ParamsModel = Model | Callable[[Params], Model]


def schema_model(name: str) -> type[BaseModel]:
    """The SDK's `acp.schema.<name>`, looked up when a request needs it."""
    model: type[BaseModel] = getattr(importlib.import_module("acp.schema"), name)
    return model


def parse_params(model: ParamsModel, params: Any) -> tuple[Any, Params]:
    """The validated request and its raw params; RequestError -32602 naming bad fields."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise RequestError(INVALID_PARAMS, "Invalid params: params must be an object", {"field": "params"})
    chosen = model if isinstance(model, str | type) else model(params)
    cls: type[Any] = schema_model(chosen) if isinstance(chosen, str) else chosen
    try:
        return cls.model_validate(params), params
    except ValidationError as exc:
        raise invalid_params(exc) from None


def invalid_params(exc: ValidationError) -> RequestError:
    errors = []
    for error in exc.errors(include_url=False, include_context=False, include_input=False):
        errors.append({"field": _dotted(error["loc"]) or "params", "message": error["msg"]})
    summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
    return RequestError(
        INVALID_PARAMS,
        f"Invalid params: {summary}",
        {"errors": errors, "fields": list(dict.fromkeys(e["field"] for e in errors))},
    )


def _dotted(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
