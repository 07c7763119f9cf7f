"""The scripted model server of the Python suite (tests/support/fake_provider.py), for the
extension's tests: run with the repository's interpreter from the repository root.

Prints one JSON line {"url": openai base url} when listening. Then each stdin line is a
command, answered by one JSON line on stdout:
  {"script": [reply, ...]}   replace the queue (a reply: Reply's fields; tool_calls as
                             [{"name", "arguments", "id"?}])
  {"requests": true}         -> {"count": n, "pending": m, "last": the last request's body,
                                 "headers": its headers (names in lower case)}
  {"release": true}          a stream held after its first text (`hold_after_first_text`) goes on
Exits when stdin closes.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec


def reply_from(data: dict[str, Any]) -> Reply:
    calls = [ToolCallSpec(**call) for call in data.pop("tool_calls", [])]
    return Reply(tool_calls=calls, **data)


def main() -> None:
    with FakeProvider() as fake:
        print(json.dumps({"url": fake.openai_base_url}), flush=True)
        for line in sys.stdin:
            command = json.loads(line)
            if "script" in command:
                fake.script([reply_from(item) for item in command["script"]])
                print(json.dumps({"ok": True}), flush=True)
            elif "release" in command:
                fake.release_stream()
                print(json.dumps({"ok": True}), flush=True)
            elif "requests" in command:
                requests = fake.requests
                last = requests[-1].body if requests else None
                headers = requests[-1].headers if requests else None
                answer = {"count": len(requests), "pending": fake.pending, "last": last, "headers": headers}
                print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
