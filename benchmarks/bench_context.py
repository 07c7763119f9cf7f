"""How much an estimate_messages_tokens call costs next to serialising the same request.

The loop estimates the context before every model call; the provider serialises the
whole request for that call anyway. The ratio shows the estimate is a small fraction of
that unavoidable cost, so a per-message cache would buy nothing. Run:

    python benchmarks/bench_context.py
"""

from __future__ import annotations

import json
import sys
import timeit

from hermes_core.loop.turn_context import estimate_messages_tokens
from hermes_core.messages import ImagePart, Message, TextPart, ToolCall
from hermes_core.providers.base import ToolSpec


def history(turns: int) -> list[Message]:
    messages: list[Message] = []
    for n in range(turns):
        messages.append(Message(role="user", content=f"Please fix bug {n} in src/module_{n}.py " * 5))
        call = ToolCall(id=f"c{n}", name="read_file", arguments=json.dumps({"path": f"src/module_{n}.py"}))
        messages.append(Message(role="assistant", content="Let me look.", tool_calls=[call]))
        messages.append(Message(role="tool", content="x = 1\n" * 400, tool_call_id=f"c{n}", name="read_file"))
        answer: str | list[TextPart | ImagePart] = "Fixed it by changing the guard."
        if n % 25 == 0:
            answer = [TextPart("Here is a screenshot"), ImagePart("image/png", "A" * 50_000)]
        messages.append(Message(role="assistant", content=answer))
    return messages


def main() -> None:
    messages = history(125)  # 500 messages
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    tools = [ToolSpec(f"tool_{i}", "does things " * 20, schema) for i in range(20)]
    system = "You are hermes-acp. " * 400
    runs = 50
    estimate = timeit.timeit(lambda: estimate_messages_tokens(system, messages, tools), number=runs) / runs
    # The floor a per-message cache keyed by id(message) could reach: one dict hit each.
    cache = {id(m): 1 for m in messages}
    cached = timeit.timeit(lambda: sum(cache[id(m)] for m in messages), number=runs) / runs
    serialise = timeit.timeit(lambda: json.dumps([m.to_dict() for m in messages]), number=5) / 5
    sys.stderr.write(
        f"500 messages: estimate {estimate * 1e3:.3f} ms, serialise {serialise * 1e3:.3f} ms, "
        f"estimate/serialise = {estimate / serialise:.4f}, "
        f"estimate/id-cache floor = {estimate / cached:.2f}\n"
    )


if __name__ == "__main__":
    main()
