"""The server's door into the start-up layer: when a request may run, and its params read.

Every request but a first `initialize` waits for the session modules the warm-up thread
imports (warmup.py), so the event loop never imports a module half-way through another
thread's import. Then its params are read: plainly valid params without the SDK's schema
(plain_params.py; hello.py for `initialize`), anything else by the schema's model, imported
in a thread when first needed (schema_params.py), so a bad field is a -32602 naming it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hermes_acp.startup.hello import HELLO_MODEL, initialize_model, is_plain
from hermes_acp.startup.schema_params import Params, ParamsModel, parse_params
from hermes_acp.startup.warmup import Warmup


class Startup:
    """What the server asks of the start-up layer: `read` a request's params once it may
    run; say when the hello was answered (`greeted`) and when a session opened
    (`session_opening`), so the warm-up knows what to import next."""

    def __init__(self) -> None:
        self.warmup = Warmup()

    @property
    def sdks_imported(self) -> asyncio.Event:
        """Set once what a model call needs is imported: a turn waits for it."""
        return self.warmup.sdks_imported

    def greeted(self) -> None:
        """The hello is answered (here or before the server existed): warm up now."""
        self.warmup.start()

    def session_opening(self) -> None:
        """A session opens: its turns will need the HTTP modules, imported once the
        session modules are in."""
        self.warmup.want_sdk()

    async def read(self, method: str, model: ParamsModel, params: Any) -> tuple[Any, Params]:
        """The request and its raw params, once `method` may run. `model` is a schema
        model's name, a model, or a function of the params choosing one. RequestError
        -32602 when the params are not valid."""
        warmup = self.warmup
        hello = model == HELLO_MODEL
        if not warmup.modules_imported.is_set() and (not hello or warmup.started):
            # Requests start in the order they came (an initialize too, once any waits).
            await warmup.modules_ready()
        if hello:
            if isinstance(params, dict) and not is_plain(params) and warmup.started:
                await warmup.schema_ready()  # an odd hello while turns may run: off the loop
            return parse_params(initialize_model, params)
        from hermes_acp.startup.plain_params import READERS  # imported by the warm-up

        reader = READERS.get(method)
        raw = params if params is not None else {}
        request = reader(raw) if reader else None
        if request is not None:
            return request, raw
        if reader is not None and isinstance(params, dict):
            await warmup.schema_ready()  # declined: the schema decides, imported off the loop
        return parse_params(model, params)
