"""The SDK's package `__init__`, deferred: start-up imports only what it uses, and the
package is whole for whoever asks it for more."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys
from hermes_acp.startup.sdk_import import defer_package_init
defer_package_init()  # as `hermes-acp --stdio` does before it imports the server
import hermes_acp.server
after_import = "acp.schema" in sys.modules
tracing_loaded = "opentelemetry" in sys.modules
import acp.telemetry
import opentelemetry.trace
import acp
from acp import schema as by_from
submodule_alone = "acp.core" not in sys.modules
from acp import PROTOCOL_VERSION, Agent, RequestError
from acp.exceptions import RequestError as direct
print(json.dumps({
    "schema_after_importing_the_server": after_import,
    "opentelemetry_after_importing_the_server": tracing_loaded,
    "sdk_spans": acp.telemetry.TRACER is not None,
    "opentelemetry_still_importable": callable(opentelemetry.trace.get_tracer),
    "submodule_without_init": submodule_alone,
    "schema_is_the_module": by_from is sys.modules["acp.schema"],
    "protocol_version": PROTOCOL_VERSION,
    "same_class": RequestError is direct,
    "agent": Agent.__name__,
    "init_ran_once": getattr(vars(acp).get("__getattr__"), "__module__", "acp") == "acp",  # ours is gone
}))
"""


def test_the_server_imports_without_the_schema_and_the_package_stays_whole() -> None:
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report == {
        "schema_after_importing_the_server": False,
        "opentelemetry_after_importing_the_server": False,  # ~10 ms of CPU, spans nobody records
        "sdk_spans": False,
        "opentelemetry_still_importable": True,
        "submodule_without_init": True,
        "schema_is_the_module": True,
        "protocol_version": 1,
        "same_class": True,
        "agent": "Agent",
        "init_ran_once": True,
    }


# While the SDK's telemetry module is imported without tracing, another thread imports
# opentelemetry. A stand-in `logfire` (the first thing the telemetry module imports) holds
# that import until the other thread is done, then says it is not installed.
CONCURRENT = """
import json, sys, threading
telemetry_running, other_done = threading.Event(), threading.Event()
other = {}
def import_tracing():
    telemetry_running.wait()
    try:
        import opentelemetry.trace
        other["imported"] = callable(opentelemetry.trace.get_tracer)
    except Exception as exc:
        other["imported"] = repr(exc)
    other_done.set()
thread = threading.Thread(target=import_tracing)
thread.start()
from hermes_acp.startup.sdk_import import defer_package_init
defer_package_init()
thread.join()
import acp.telemetry
print(json.dumps({"other_thread": other["imported"], "sdk_spans": acp.telemetry.TRACER is not None}))
"""

STAND_IN_LOGFIRE = """
import sys
main = sys.modules["__main__"]
main.telemetry_running.set()
main.other_done.wait(60)
raise ModuleNotFoundError("No module named 'logfire'", name="logfire")
"""


def test_another_threads_import_of_opentelemetry_meanwhile_succeeds(tmp_path: Path) -> None:
    (tmp_path / "logfire.py").write_text(STAND_IN_LOGFIRE)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", CONCURRENT], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"other_thread": True, "sdk_spans": False}
