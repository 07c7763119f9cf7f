"""Building a session: its workspace, approver, tools (built-in, memory, session search,
the editor's MCP servers), workspace watcher, agent and event translator.

Everything the agent's tool list needs is ready before the agent is built: the tool
list and system prompt are fixed from then on.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_acp.session import mcp_servers
from hermes_acp.session.errors import INVALID_PARAMS, protocol_error
from hermes_acp.session.options import MODE_IDS
from hermes_acp.session.records import SharedStore
from hermes_acp.session.state import ClientProfile, Session, release

if TYPE_CHECKING:
    from hermes_acp.bridge.channel import ClientChannel
    from hermes_core.agent import Agent
    from hermes_core.config import Settings
    from hermes_core.messages import Message
    from hermes_core.policy.permission_rules import PermissionRules
    from hermes_core.rewind.checkpoints import Checkpoints
    from hermes_core.store.writer import SessionRecord
    from hermes_core.tools.base import Tool
    from hermes_core.tools.delegate import ChildReport
    from hermes_core.workspace import Workspace


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a session opens: its working directory, the directories it may also use, and
    the editor's MCP servers for it (session/new, load, resume and fork each name them)."""

    cwd: str
    extra_dirs: list[str]
    mcp_servers: list[Any]

    @classmethod
    def of(cls, request: Any) -> Placement:
        """From a request's `cwd`, `additionalDirectories` and `mcpServers`."""
        return cls(request.cwd, list(request.additional_directories or []), list(request.mcp_servers or []))


class SessionFactory:
    def __init__(self, channel: ClientChannel, client: ClientProfile, store: SharedStore) -> None:
        self.channel = channel
        self.client = client  # shared with the server: filled in by `initialize`
        self.store = store

    async def open(
        self,
        settings: Settings,
        session_id: str,
        place: Placement,
        *,
        record: SessionRecord | None = None,
        messages: list[Message] | None = None,
    ) -> Session:
        """A ready session, fresh or restored from `record` and `messages`. Its MCP
        servers are connected (the ones that failed are in `mcp_problems`)."""
        cwd, extra_dirs = place.cwd, place.extra_dirs
        from hermes_acp.bridge.events import EventTranslator
        from hermes_acp.bridge.permissions import AcpApprover
        from hermes_core.policy.approval import ApprovalMemory, Mode
        from hermes_core.sandbox.edit_guard import guarded_inside
        from hermes_core.store.sessions import restored_plan, restored_usage
        from hermes_core.store.writer import Persister, store_child

        store = await self.store.get()
        hidden_env = frozenset(e.api_key_env for e in settings.fallback if e.api_key_env)
        mcp, problems = await mcp_servers.connect(
            place.mcp_servers, cwd, timeout=settings.mcp_connect_timeout, hidden_env=hidden_env
        )
        extra_tools: list[Tool] = mcp.tools() if mcp is not None else []
        workspace = await asyncio.to_thread(self._workspace, settings, session_id, cwd, extra_dirs)
        extra_tools += await asyncio.to_thread(_skill_tools, settings, cwd)
        approver = AcpApprover(self.channel, session_id)
        mode = Mode(record.mode if record and record.mode in MODE_IDS else settings.default_mode)

        def build() -> Agent:
            from hermes_core.agent import Agent
            from hermes_core.changes.watch import WorkspaceWatcher
            from hermes_core.policy.hooks import Hooks
            from hermes_core.tools.session_search import SessionSearchTool

            agent = Agent(
                settings=settings,
                workspace=workspace,
                approver=approver,
                extra_tools=[SessionSearchTool(store, session_id, cwd), *extra_tools],
                mode=mode,
                messages=messages,
                system_prompt=record.system_prompt if record else None,
                approvals=ApprovalMemory.from_dict(record.approvals) if record else None,
                title=record.title if record else None,
                watcher=WorkspaceWatcher([cwd, *extra_dirs]),
                session_id=session_id,
            )
            if record is not None:
                if record.model:
                    agent.switch_model(record.model)
                agent.set_effort(record.reasoning_effort)
            rules = _permission_rules(settings, cwd)
            if workspace.sandbox is not None:  # a deny Read rule's folders: hidden from commands too
                workspace.sandbox.hidden += tuple(rules.denied_folders())
                # and a deny or ask Edit rule's paths: read-only for commands too
                workspace.sandbox.edit_guarded = guarded_inside(
                    rules.edit_guarded(), workspace.sandbox.scope.roots
                )
                # and what a wildcard Edit rule matches (`Edit(**/*.pem)`)
                if patterns := rules.edit_patterns():
                    from hermes_core.sandbox.edit_globs import for_rules

                    workspace.sandbox.edit_globs = for_rules(
                        patterns, workspace.sandbox.scope.roots, workspace.sandbox.edit_guarded
                    )
            agent.connect(
                rules=rules,
                checkpoints=_checkpoints(settings, cwd, session_id),
                hooks=Hooks(rules.hook_specs(), cwd, session_id, sandbox=workspace.sandbox),
            )
            return agent

        agent: Agent | None = None
        try:
            agent = built = await asyncio.to_thread(build)
            if record is not None:
                built.restore(restored_usage(record), record.cost_usd, restored_plan(record))
        except BaseException:
            await release(agent, mcp)
            raise
        translator = EventTranslator(session_id, terminal_meta=self.client.terminal_meta, cwd=cwd)
        session = Session(
            id=session_id,
            cwd=cwd,
            extra_dirs=extra_dirs,
            agent=built,
            translator=translator,
            persister=Persister(session_id, self.store.get),
            mcp=mcp,
            mcp_problems=problems,
            stored=record is not None,
            created=record.created_at if record is not None else time.time(),
        )

        async def store_subagent(report: ChildReport) -> None:
            store_child(session, report)

        built.connect(child_sink=store_subagent)
        if self.client.elicitation_form:
            from hermes_acp.bridge.elicitation import ElicitationAsker

            built.connect(asker=ElicitationAsker(self.channel, session_id))
        return session

    def _workspace(self, settings: Settings, session_id: str, cwd: str, extra_dirs: list[str]) -> Workspace:
        from hermes_core.sandbox.bwrap import Sandbox
        from hermes_core.workspace import LocalWorkspace, WorkspaceScope

        # The agent's home is a secret to the file tools as it is to the sandbox.
        scope = WorkspaceScope(Path(cwd), tuple(Path(d) for d in extra_dirs), hidden=(settings.home,))
        sandbox = Sandbox.from_settings(settings, scope)
        sandbox.confinement  # noqa: B018 -- probes bwrap once, here in a thread, not in a turn
        local = LocalWorkspace(scope, sandbox=sandbox)
        if not self.client.offers_workspace:
            return local
        from hermes_acp.bridge.workspace import ClientWorkspace

        return ClientWorkspace(
            scope,
            self.channel,
            session_id,
            read=self.client.read_file,
            write=self.client.write_file,
            terminal=self.client.terminal,
            local=local,
        )


def _checkpoints(settings: Settings, cwd: str, session_id: str) -> Checkpoints | None:
    """Snapshots of the workspace before the agent changes it, for /rewind."""
    from hermes_core.rewind.checkpoints import Checkpoints, CheckpointStore

    if not settings.checkpoints:
        return None
    return Checkpoints(
        CheckpointStore(settings.home, cwd, session_id, max_files=settings.checkpoint_max_files)
    )


def _permission_rules(settings: Settings, cwd: str) -> PermissionRules:
    from hermes_core.policy.hook_specs import specs_from_table
    from hermes_core.policy.permission_rules import PermissionRules

    user_hooks = specs_from_table(settings.hooks.as_table(), "your config.toml", own=True)
    return PermissionRules.load(settings.home, cwd, settings.permissions.as_table(), user_hooks)


def _skill_tools(settings: Settings, cwd: str) -> list[Tool]:
    """The `skill` tool when there are skills (fixed for the session, like its prompt)."""
    from hermes_core.prompt.skills import discover_skills, skill_folders
    from hermes_core.tools.skill import SkillTool

    skills = discover_skills(skill_folders(settings.home, Path(cwd)))
    return [SkillTool(skills)] if skills else []


def check_directories(place: Placement) -> None:
    """cwd and additionalDirectories must be absolute paths of existing directories."""
    _check_directory("cwd", place.cwd)
    for index, path in enumerate(place.extra_dirs):
        _check_directory(f"additionalDirectories[{index}]", path)


def _check_directory(field_name: str, path: str) -> None:
    if not Path(path).is_absolute():
        raise protocol_error(
            INVALID_PARAMS,
            f"{field_name} must be an absolute path; got {path!r}",
            {"field": field_name, "path": path},
        )
    if not Path(path).is_dir():
        what = "does not exist" if not Path(path).exists() else "is not a directory"
        raise protocol_error(
            INVALID_PARAMS,
            f"{field_name} must be an existing directory; {path!r} {what}",
            {"field": field_name, "path": path},
        )
