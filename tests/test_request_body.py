"""A body written from kept encodings (`encode_body`) is the JSON of the same object, in
the order asked for, whatever mix of kept arrays, plain values and `extra_body` it holds."""

from __future__ import annotations

import json

from hermes_core.providers.body import Encoded, dumps, encode_body


def kept(items: list[object]) -> Encoded:
    return Encoded(items, [dumps(item) for item in items])


def test_a_body_is_the_json_of_its_parameters_in_the_order_asked_for() -> None:
    history = kept([{"role": "user", "content": 'é ✓ 🙂 "quoted"\n'}, {"role": "assistant", "content": None}])
    params = {
        "tools": [{"name": "t"}],
        "messages": history.after({"role": "system", "content": "s"}),
        "model": "m",
        "extra_body": {"reasoning": {"effort": "high"}},
        "unplaced": 1.5,
    }
    body = encode_body(params, ("model", "messages", "extra_body", "tools"))
    expected = {
        "model": "m",
        "messages": [{"role": "system", "content": "s"}, *history],
        "reasoning": {"effort": "high"},
        "tools": [{"name": "t"}],
        "unplaced": 1.5,
    }
    assert body == json.dumps(expected, ensure_ascii=False, separators=(",", ":")).encode()
    assert list(json.loads(body)) == list(expected)


def test_empty_arrays_and_bodies_are_valid_json() -> None:
    assert encode_body({"input": kept([])}, ("input",)) == b'{"input":[]}'
    assert encode_body({"input": kept([]).after("x")}, ()) == b'{"input":["x"]}'
    assert encode_body({}, ("model",)) == b"{}"
    assert encode_body({"extra_body": {"a": 1}}, ()) == b'{"a":1}'
