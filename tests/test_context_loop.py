"""Context management in real turns: cache-stable requests and compression at the threshold."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from hermes_core.events import HistoryReplaced, Status, UsageUpdated
from hermes_core.loop.compression import SUMMARY_PREFIX
from hermes_core.messages import Message, ToolCall
from tests.support.agents import collect, ended, make_agent, of_type
from tests.support.fake_provider import Reply, ToolCallSpec

pytestmark = pytest.mark.usefixtures("agent_test")


@pytest.fixture
def workdir(project: Path) -> Path:
    (project / "app.py").write_text("".join(f"line_{i} = {i}\n" for i in range(40)))
    (project / "AGENTS.md").write_text("Run the tests with pytest.\n")
    return project


def _without_cache_markers(value):
    if isinstance(value, dict):
        return {k: _without_cache_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_markers(v) for v in value]
    return value


def turn_script(i: int) -> list[Reply]:
    tools = [
        ToolCallSpec("read_file", {"path": "app.py", "offset": 1 + i, "limit": 3}),
        ToolCallSpec("search", {"pattern": f"line_{i}"}),
    ]
    return [Reply(tool_calls=tools[: 1 + i % 2]), Reply(text=f"answer {i}")]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "openai-responses"])
async def test_twenty_turns_each_request_extends_the_last_byte_for_byte(fake, workdir, provider):
    """The providers' prompt caches key on a stable prefix: the system prompt, the tools
    and every earlier message must go out identical, turn after turn."""
    fake.script([reply for i in range(20) for reply in turn_script(i)])
    agent = make_agent(fake, workdir, provider)
    for i in range(20):
        assert ended(await collect(agent.run_turn(f"question {i}"))).text == f"answer {i}"
    history_key = {"openai": "messages", "anthropic": "messages", "openai-responses": "input"}[provider]
    # Anthropic's breakpoint marker moves to the newest user message on every request;
    # markers are not part of the cached prefix, so they are left out of the comparison.
    bodies = [_without_cache_markers(r.body) for r in fake.requests]
    assert len(bodies) == 40
    for earlier, later in itertools.pairwise(bodies):
        assert later[history_key][: len(earlier[history_key])] == earlier[history_key]
        for key in ("tools", "system", "instructions"):
            assert later.get(key) == earlier.get(key)
    assert "Run the tests with pytest." in str(
        bodies[0].get("system") or bodies[0].get("instructions") or ""
    ) + str(bodies[0].get("messages", [{}])[0])


def _tool_history(turns: int) -> list[Message]:
    history: list[Message] = []
    for i in range(turns):
        call = ToolCall(f"call_h{i}", "read_file", json.dumps({"path": "app.py", "offset": i + 1}))
        history += [
            Message(role="user", content=f"question {i}"),
            Message(role="assistant", content="", tool_calls=[call]),
            Message(role="tool", content=f"line_{i} = {i}\n" * 20, tool_call_id=call.id, name="read_file"),
            Message(role="assistant", content=f"answer {i}"),
        ]
    return history


async def test_compression_triggers_at_the_threshold_and_keeps_tool_pairs(fake, workdir):
    history = _tool_history(10)
    probe = make_agent(fake, workdir, messages=history)
    size = probe.estimate_context()
    # The threshold (half the window) sits just above the history plus the next user
    # message: the turn's first call goes out as is, the tool result then tips it over.
    window = 2 * (size + 25)
    fake.script(
        [
            Reply(tool_calls=[ToolCallSpec("read_file", {"path": "app.py"})]),
            Reply(text="SUMMARY: read app.py ten times."),
            Reply(text="done"),
        ]
    )
    agent = make_agent(
        fake,
        workdir,
        messages=history,
        settings={"context_windows": {"gpt-4.1": window}, "compression_keep_last": 6},
    )
    events = await collect(agent.run_turn("and now?"))
    assert ended(events).text == "done"
    assert of_type(events, HistoryReplaced), "the context passed the threshold but nothing was compressed"
    assert "question 3" in str(fake.requests[0].body)  # the first call went out whole
    assert "question 3" in str(fake.requests[1].body)  # the middle went to the summariser
    after = str(fake.requests[2].body)
    assert "SUMMARY: read app.py ten times." in after and "question 3" not in after
    assert any(isinstance(e, Status) and e.kind == "compressed" for e in events)
    assert of_type(events, UsageUpdated)[-1].context_tokens < window // 2
    kept = agent.messages
    assert kept[0].text == "question 0"  # the first exchange stays
    assert any(SUMMARY_PREFIX in m.text for m in kept)
    for index, message in enumerate(kept):  # every result still follows its call
        if message.role == "tool":
            asking = next(m for m in reversed(kept[:index]) if m.role == "assistant")
            assert message.tool_call_id in {c.id for c in asking.tool_calls}


async def test_memory_saved_elsewhere_is_recalled_once_in_the_user_message(fake, workdir):
    """Memory saved after the session started (by another session) reaches the model in
    the next user message, once; the system prompt stays as it was, and a fact the model
    saved itself is not repeated back to it."""
    from hermes_core.prompt.memory import MemoryStore

    elsewhere = MemoryStore(make_agent(fake, workdir).memory.memory_dir, workdir)
    elsewhere.add("user", "Prefers answers in French")
    agent = make_agent(fake, workdir)
    save = ToolCallSpec("memory", {"action": "add", "scope": "workspace", "text": "Uses uv for deps"})
    fake.script(
        [Reply(text="one"), Reply(tool_calls=[save]), Reply(text="saved"), Reply(text="two"), Reply(text="3")]
    )
    await collect(agent.run_turn("first"))  # the fact was there when the session started
    elsewhere.add("workspace", "The CI runs on ARM")
    await collect(agent.run_turn("remember uv"))
    await collect(agent.run_turn("second"))
    await collect(agent.run_turn("third"))

    users = [
        r.body["messages"][-1]["content"] for r in fake.requests if r.body["messages"][-1]["role"] == "user"
    ]
    assert "Prefers answers in French" in fake.requests[0].body["messages"][0]["content"]
    assert "Prefers answers in French" not in str(users)
    recalled = [text for text in users if "The CI runs on ARM" in str(text)]
    assert len(recalled) == 1 and "Recalled from memory" in str(recalled[0])
    assert "remember uv" in str(recalled[0])  # the first turn after the save by the other session
    assert "Uses uv for deps" not in str(users)
    assert len({r.body["messages"][0]["content"] for r in fake.requests}) == 1


async def test_a_subdirectory_session_shares_its_repositorys_memory(fake, workdir):
    (workdir / ".git").mkdir()
    (workdir / "src").mkdir()
    at_root = make_agent(fake, workdir)
    at_root.memory.add("workspace", "Releases are tagged vX.Y")
    below = make_agent(fake, workdir / "src", home=at_root.settings.home)
    assert "Releases are tagged vX.Y" in below.system_prompt
    assert below.memory.path("workspace") == at_root.memory.path("workspace")


@pytest.mark.parametrize("settled", [False, True])
async def test_memory_edited_by_hand_between_turns_is_recalled(fake, workdir, monkeypatch, settled):
    """A turn reads the memory files again only when a stat says they changed; a hand edit
    between two turns still reaches the model, even one in place and of the same size right
    after the last read (`settled=False`: the file's times may not have moved), or one made
    when the last read's state was old enough to be trusted (`settled=True`)."""
    import hermes_core.prompt.recall as recall

    if settled:
        monkeypatch.setattr(recall, "RACY_NS", 0)
    agent = make_agent(fake, workdir)
    path = agent.memory.path("user")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# hermes-acp memory: user\n\n- Deploys on Fridays\n")
    agent = make_agent(fake, workdir)  # the fact is in its system prompt
    fake.script([Reply(text="one"), Reply(text="two"), Reply(text="three"), Reply(text="four")])
    await collect(agent.run_turn("first"))
    await collect(agent.run_turn("second"))  # nothing changed: nothing recalled
    text = path.read_text()
    edited = text.replace("Fridays", "Mondays") if not settled else text + "- Ships with uv\n"
    with path.open("r+") as file:  # in place, as an editor may save
        file.write(edited)
    await collect(agent.run_turn("third"))
    await collect(agent.run_turn("fourth"))

    users = [str(r.body["messages"][-1]["content"]) for r in fake.requests]
    fact = "Deploys on Mondays" if not settled else "Ships with uv"
    assert [fact in text for text in users] == [False, False, True, False]
