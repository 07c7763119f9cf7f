"""session/request_permission through a real SDK connection, answered like an editor would."""

from __future__ import annotations

import asyncio
import logging

import pytest
from acp.exceptions import RequestError

from hermes_acp.bridge.permissions import AcpApprover
from hermes_core.policy.approval import ApprovalRequest, Approver, Decision
from tests.support.bridge_pair import open_pair

SID = "sess-p"


def command_request(
    call_id: str, command: str, title: str, scope: str, rule: str | None = None
) -> ApprovalRequest:
    return ApprovalRequest(
        call_id=call_id,
        tool="run",
        title=title,
        kind="execute",
        arguments={"command": command},
        reason="runs a command",
        scope=scope,
        rule=rule,
    )


GIT_STATUS = command_request("call-3", "git status", "`git status`", "terminal:git status")
RM_RF = command_request(
    "call-4", "rm -rf ~", "rm -rf ~", "terminal:rm", rule="recursive delete of a broad path"
)


def answering(outcome: dict):
    async def responder(method: str, params: dict) -> dict:
        assert method == "session/request_permission"
        return {"outcome": outcome}

    return responder


@pytest.fixture
async def pair():
    pair = await open_pair()
    yield pair
    await pair.aclose()


@pytest.mark.parametrize(
    ("option_id", "decision"),
    [
        ("allow_once", Decision.ALLOW_ONCE),
        ("allow_always", Decision.ALLOW_ALWAYS),
        ("allow_project", Decision.ALLOW_PROJECT),
        ("reject_once", Decision.REJECT_ONCE),
        ("reject_always", Decision.REJECT_ALWAYS),
    ],
)
async def test_each_option_maps_to_its_decision(pair, option_id, decision):
    pair.responder = answering({"outcome": "selected", "optionId": option_id})
    approver: Approver = AcpApprover(pair.agent, SID)
    assert await approver.decide(GIT_STATUS) is decision
    [asked] = pair.calls("session/request_permission")
    assert asked["sessionId"] == SID
    # The same card the tool call already shows, not a new one.
    assert asked["toolCall"] == {
        "toolCallId": "call-3",
        "title": "`git status`",
        "kind": "execute",
        "status": "pending",
        "rawInput": {"command": "git status"},
        # the command decided on, whole: a title is one line and may be cut
        "content": [{"type": "content", "content": {"type": "text", "text": "```\ngit status\n```"}}],
    }
    assert [(o["optionId"], o["kind"]) for o in asked["options"]] == [
        ("allow_once", "allow_once"),
        ("allow_always", "allow_always"),
        ("allow_project", "allow_always"),  # "… in this project": an always the agent's home keeps
        ("reject_once", "reject_once"),
        ("reject_always", "reject_always"),
    ]
    names = {o["optionId"]: o["name"] for o in asked["options"]}
    assert names["allow_always"] == "Always allow `git status`"
    assert names["reject_always"] == "Always reject `git status`"
    assert names["allow_project"] == "Always allow `git status` in this project"


async def test_cancelled_outcome_is_cancelled(pair):
    pair.responder = answering({"outcome": "cancelled"})
    assert await AcpApprover(pair.agent, SID).decide(GIT_STATUS) is Decision.CANCELLED


async def test_an_option_that_was_not_offered_rejects_and_warns(pair, caplog):
    pair.responder = answering({"outcome": "selected", "optionId": "allow_forever"})
    with caplog.at_level(logging.WARNING, logger="hermes_acp.bridge.permissions"):
        assert await AcpApprover(pair.agent, SID).decide(GIT_STATUS) is Decision.REJECT_ONCE
    assert "allow_forever" in caplog.text


async def test_dangerous_request_names_the_rule_and_offers_no_allow_always(pair, caplog):
    pair.responder = answering({"outcome": "selected", "optionId": "allow_always"})
    with caplog.at_level(logging.WARNING, logger="hermes_acp.bridge.permissions"):
        # A client that sends allow_always anyway does not get to silence the rule.
        assert await AcpApprover(pair.agent, SID).decide(RM_RF) is Decision.REJECT_ONCE
    [asked] = pair.calls("session/request_permission")
    assert asked["toolCall"]["title"] == "⚠ Dangerous: recursive delete of a broad path — rm -rf ~"
    assert [o["optionId"] for o in asked["options"]] == ["allow_once", "reject_once", "reject_always"]
    assert asked["_meta"]["hermes"]["rule"] == "recursive delete of a broad path"


async def test_dangerous_request_can_still_be_allowed_once(pair):
    pair.responder = answering({"outcome": "selected", "optionId": "allow_once"})
    assert await AcpApprover(pair.agent, SID).decide(RM_RF) is Decision.ALLOW_ONCE


async def test_client_error_rejects_and_logs(pair, caplog):
    async def broken(method: str, params: dict) -> dict:
        raise RequestError.internal_error({"details": "dialog crashed"})

    pair.responder = broken
    with caplog.at_level(logging.WARNING, logger="hermes_acp.bridge.permissions"):
        assert await AcpApprover(pair.agent, SID).decide(GIT_STATUS) is Decision.REJECT_ONCE
    assert "call-3" in caplog.text


async def test_malformed_answer_rejects(pair):
    async def odd(method: str, params: dict) -> dict:
        return {"outcome": "yes please"}

    pair.responder = odd
    assert await AcpApprover(pair.agent, SID).decide(GIT_STATUS) is Decision.REJECT_ONCE


async def test_cancelling_the_turn_while_asking_propagates(pair):
    asked = asyncio.Event()
    never = asyncio.Event()

    async def waiting(method: str, params: dict) -> dict:
        asked.set()
        await never.wait()
        return {"outcome": {"outcome": "cancelled"}}

    pair.responder = waiting
    task = asyncio.create_task(AcpApprover(pair.agent, SID).decide(GIT_STATUS))
    await asyncio.wait_for(asked.wait(), 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The editor answering late (as it must after session/cancel) does no harm.
    never.set()
    await pair.settle()


async def test_outside_paths_and_reason_travel_in_meta(pair):
    pair.responder = answering({"outcome": "selected", "optionId": "reject_once"})
    request = ApprovalRequest(
        call_id="call-5",
        tool="write_file",
        title="Write /etc/hosts",
        kind="edit",
        arguments={"path": "/etc/hosts", "content": ""},
        reason="outside the workspace",
        scope="edits in /etc",
        outside_paths=("/etc/hosts",),
    )
    await AcpApprover(pair.agent, SID).decide(request)
    [asked] = pair.calls("session/request_permission")
    assert asked["_meta"]["hermes"] == {
        "reason": "outside the workspace",
        "scope": "edits in /etc",
        "outsidePaths": ["/etc/hosts"],
    }
    assert {o["name"] for o in asked["options"]} >= {"Always allow edits in /etc in this session"}
