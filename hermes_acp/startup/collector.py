"""Python's cyclic garbage collector, paused while a cold process imports its way to its
first model call.

Those imports allocate some 90,000 objects that live as long as the process (modules,
classes, functions, schemas) and next to no garbage: the collector's passes over them
(~110 in a cold thread before its first request, one of them a full pass; 90-110 ms of
its 0.75-1 s of CPU) would free some 800-2,000 objects. So `run_stdio` pauses it before the first
import, and the warm-up resumes it once what a model call needs is imported (or once it
has nothing more to import until a session opens). The heap made by then is frozen
(`gc.freeze`): later collections never walk it again, which keeps a session's own
collections short too; the little garbage among it is kept rather than collected.
"""

from __future__ import annotations

import gc

# No lock (nor `threading`, which the initialize answer does without): `pause_collector`
# runs before the process has a second thread, `resume_collector` only in the warm-up's.
_paused = False


def pause_collector() -> None:
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_collector() -> None:
    """Collect again, with what start-up made frozen; once. A collector this module did
    not pause (a server run in-process, by tests) is left as it is."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
