"""What a tool is: a typed argument model, metadata the loop and the editor need, a handler."""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, get_args

from pydantic import BaseModel, ConfigDict

from hermes_core.errors import ToolFailed
from hermes_core.events import Event, FileDiff, Location, PlanEntry, ToolKind
from hermes_core.providers.base import ToolSpec
from hermes_core.tools.arg_schemas import ARG_SCHEMAS
from hermes_core.workspace import Workspace

if TYPE_CHECKING:
    from hermes_core.execution.jobs import Jobs
    from hermes_core.messages import ImagePart
    from hermes_core.shell.parse import CommandLine
    from hermes_core.workspace import RunningCommand

Args = TypeVar("Args", bound=BaseModel)


class ToolArgs(BaseModel):
    """The base of the built-in tools' argument models. Each builds its validator at its
    first call (`defer_build`), not at import: a text-only turn builds none, and the model
    reads their schemas from the table generated from them (`arg_schemas.py`)."""

    model_config = ConfigDict(defer_build=True)


@dataclass(slots=True)
class ToolLimits:
    default_read_lines: int = 2_000
    max_line_chars: int = 2_000
    max_output_chars: int = 30_000  # tool output handed to the model
    command_timeout: float = 120.0  # seconds, foreground commands
    max_command_timeout: float = 600.0
    search_max_results: int = 200


@dataclass(slots=True)
class SessionToolState:
    """What tools remember across calls within one session."""

    plan: tuple[PlanEntry, ...] = ()
    processes: dict[str, RunningCommand] = field(default_factory=dict)  # background handles
    process_commands: dict[str, str] = field(default_factory=dict)
    next_handle: int = 1
    jobs: Jobs = field(default_factory=lambda: _jobs())  # their ends, for the model and the cards


def _jobs() -> Jobs:
    from hermes_core.execution.jobs import Jobs

    return Jobs()


@dataclass(slots=True)
class ToolContext:
    call_id: str
    workspace: Workspace
    state: SessionToolState
    emit: Callable[[Event], None]  # progress events (command output, plan updates)
    limits: ToolLimits = field(default_factory=ToolLimits)
    allow_outside: bool = False  # an approval let this call leave the workspace
    # The permission rule guarding reads of a file (by its absolute path), as the model may
    # read it, or None: what `search` and `list_files` found inside a folder a call named is
    # checked file by file (core/policy/permission_rules.py `read_guard`).
    read_guard: Callable[[str], str | None] | None = None


@dataclass(slots=True)
class ToolResult:
    text: str  # what the model reads
    ok: bool = True
    diff: FileDiff | None = None
    raw_output: dict[str, Any] | None = None
    exit_code: int | None = None
    signal: str | None = None
    terminal_id: str | None = None
    # What the user sees instead of `text`, when that is written for the model ("" for nothing).
    shown: str | None = None
    images: list[ImagePart] = field(default_factory=list)  # for the model, after the results

    @classmethod
    def error(cls, text: str, **raw: Any) -> ToolResult:
        return cls(text=text, ok=False, raw_output=raw or None)


def schema_key(args_model: type[BaseModel]) -> str:
    """An argument model's entry in `ARG_SCHEMAS`."""
    return f"{args_model.__module__}.{args_model.__qualname__}"


@functools.cache
def _parameters(args_model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a tool's arguments: the built-in tools' from the committed
    table (tests/test_arg_schemas.py keeps it equal to what pydantic generates), others
    generated once a process (pydantic builds the model for it: ~40 ms for the first)."""
    table = ARG_SCHEMAS.get(schema_key(args_model))
    if table is not None:
        return table
    return generated_parameters(args_model)


def generated_parameters(args_model: type[BaseModel]) -> dict[str, Any]:
    """What pydantic makes of an argument model, as the model is shown it."""
    schema = args_model.model_json_schema()
    schema.pop("title", None)
    return schema


@dataclass(frozen=True, slots=True)
class ApprovalFacts:
    """What the approval policy needs to know about one call beyond its tool's kind and
    paths, declared by the tool (`Tool.approval_facts`) rather than guessed from its
    arguments' names."""

    command: CommandLine | None = None  # the shell command line it runs, read once
    unconfined: bool = False  # it asks to run that command outside the sandbox
    background: bool = False  # the call returns while that command goes on running
    always_asks: str | None = None  # why it asks in every mode (and is refused in plan mode)


NO_FACTS = ApprovalFacts()

# The specs made, shared by every session (`Tool.spec`); bounded, since a description may be
# made per instance.
_SPECS: dict[tuple[type, str, str, type[BaseModel]], ToolSpec] = {}
_SPECS_KEPT = 256


class CannotRun(ToolFailed):
    """A call that would fail for sure (a patch whose old_text is not in the file): it fails
    with this message before anyone is asked to approve it."""


class Tool(ABC, Generic[Args]):
    """A tool the model can call. A subclass's docstring is its description for the model
    (its lines joined by spaces), and the model of its arguments is the `Args` it names:
    `class ReadFileTool(Tool[ReadFileArgs])`."""

    # Set by each class, or per instance where one class serves many tools (an MCP server's).
    name: str
    description: str
    kind: ToolKind
    needs_approval: bool = False  # edits and commands
    read_only: bool = True  # offered in plan mode; runs concurrently with other reads
    args_model: ClassVar[type[BaseModel]]
    interactive: ClassVar[bool] = False  # always runs alone, in order
    # One "always" answer covers every tool of the group ("edits": writes and patches alike).
    approval_group: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "description" not in cls.__dict__ and cls.__doc__:
            cls.description = " ".join(line.strip() for line in cls.__doc__.strip().splitlines())
        if "args_model" not in cls.__dict__:
            for base in getattr(cls, "__orig_bases__", ()):
                named = [
                    arg for arg in get_args(base) if isinstance(arg, type) and issubclass(arg, BaseModel)
                ]
                if named:
                    cls.args_model = named[0]

    def spec(self) -> ToolSpec:
        """The tool as the model is shown it: one object for every session of the process
        that has the same tool (a `ToolSpec` is frozen), so a provider's encoding of a tool
        list is made once for all of them (`SdkProvider.encoded_tools`), not at each
        session's first turn, when fifty sessions start at once."""
        key = (type(self), self.name, self.description, self.args_model)
        made = _SPECS.get(key)
        if made is None:
            if len(_SPECS) >= _SPECS_KEPT:  # descriptions made per instance (skills) vary
                _SPECS.clear()
            made = _SPECS[key] = self.make_spec()
        return made

    def make_spec(self) -> ToolSpec:
        """A new spec from the class's name, description and argument model. An override
        may depend on nothing else: `spec` keeps what it made by those and the class."""
        return ToolSpec(self.name, self.description, _parameters(self.args_model))  # frozen: a copy

    def parse(self, arguments: dict[str, Any]) -> Args:
        return self.args_model.model_validate(arguments)  # type: ignore[return-value]

    @abstractmethod
    def title(self, args: Args, workspace: Workspace) -> str:
        """A title that shows the actual command or path."""

    def paths(self, args: Args) -> list[str]:
        """The paths this call touches, as the model wrote them (scoping, ordering)."""
        return []

    def locations(self, args: Args, workspace: Workspace) -> list[Location]:
        out = []
        for raw in self.paths(args):
            out.append(Location(str(workspace.scope.absolute(raw)), getattr(args, "offset", None) or None))
        return out

    def approval_scope(self, args: Args) -> str:
        """What an "allow always" for this call covers; a command's is worked out from its
        line by the policy (`hermes_core.command_rules.scope`)."""
        return self.name

    def approval_facts(self, args: Args) -> ApprovalFacts:
        """The command this call runs, whether it asks to leave the sandbox, and whether it
        asks in every mode: all the approval policy reads besides kind and paths."""
        return NO_FACTS

    async def preview(
        self, args: Args, workspace: Workspace, *, allow_outside: bool = False
    ) -> FileDiff | None:
        """The change this call would make, shown while the user decides; None when there is
        nothing to show. Raises CannotRun when the call is bound to fail."""
        return None

    @abstractmethod
    async def run(self, args: Args, ctx: ToolContext) -> ToolResult: ...
