"""The JSON schemas of the built-in tools' arguments, generated from their argument models
by scripts/gen_arg_schemas.py (do not edit; tests/test_arg_schemas.py checks it): the
model is sent these without pydantic building a model before the first tool call."""

from typing import Any

ARG_SCHEMAS: dict[str, dict[str, Any]] = {
    "hermes_core.tools.clarify.ClarifyArgs": {
        "properties": {
            "question": {
                "description": "One clear question for the user.",
                "title": "Question",
                "type": "string",
            },
            "choices": {
                "description": "The answers to choose from; omit for a free-text answer.",
                "items": {"type": "string"},
                "title": "Choices",
                "type": "array",
            },
        },
        "required": ["question"],
        "type": "object",
    },
    "hermes_core.tools.delegate.DelegateArgs": {
        "$defs": {
            "SubTask": {
                "properties": {
                    "goal": {
                        "description": "What "
                        "the "
                        "subagent "
                        "must "
                        "find "
                        "out "
                        "or "
                        "do; "
                        "self-contained: "
                        "it "
                        "sees "
                        "nothing "
                        "else.",
                        "title": "Goal",
                        "type": "string",
                    },
                    "context": {
                        "default": "",
                        "description": "Facts the subagent needs that are not in the files.",
                        "title": "Context",
                        "type": "string",
                    },
                    "files": {
                        "description": "Paths worth reading first.",
                        "items": {"type": "string"},
                        "title": "Files",
                        "type": "array",
                    },
                    "tools": {
                        "anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}],
                        "default": None,
                        "description": "Tool names the subagent may use; all but delegation when omitted.",
                        "title": "Tools",
                    },
                },
                "required": ["goal"],
                "title": "SubTask",
                "type": "object",
            }
        },
        "properties": {
            "tasks": {
                "description": "One task per subagent; they run in parallel.",
                "items": {"$ref": "#/$defs/SubTask"},
                "minItems": 1,
                "title": "Tasks",
                "type": "array",
            }
        },
        "required": ["tasks"],
        "type": "object",
    },
    "hermes_core.tools.files.ListFilesArgs": {
        "properties": {
            "path": {
                "default": ".",
                "description": "The directory to list, recursively; defaults to the workspace root.",
                "title": "Path",
                "type": "string",
            },
            "glob": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "default": None,
                "description": "Only list files matching this glob, e.g. `*.py` or `src/**/test_*.ts`.",
                "title": "Glob",
            },
        },
        "type": "object",
    },
    "hermes_core.tools.files.ReadFileArgs": {
        "properties": {
            "path": {
                "description": "The file to read, relative to the workspace root or absolute.",
                "title": "Path",
                "type": "string",
            },
            "offset": {
                "anyOf": [{"minimum": 1, "type": "integer"}, {"type": "null"}],
                "default": None,
                "description": "First line to read (1-based).",
                "title": "Offset",
            },
            "limit": {
                "anyOf": [{"minimum": 1, "type": "integer"}, {"type": "null"}],
                "default": None,
                "description": "How many lines to read.",
                "title": "Limit",
            },
        },
        "required": ["path"],
        "type": "object",
    },
    "hermes_core.tools.files.WriteFileArgs": {
        "properties": {
            "path": {
                "description": "The file to create or overwrite; missing parent directories are created.",
                "title": "Path",
                "type": "string",
            },
            "content": {
                "description": "The complete new content of the file.",
                "title": "Content",
                "type": "string",
            },
        },
        "required": ["path", "content"],
        "type": "object",
    },
    "hermes_core.tools.memory.MemoryArgs": {
        "properties": {
            "action": {
                "description": "add: save a "
                "fact; remove: "
                "delete the "
                "facts "
                "containing "
                "`text`; list: "
                "show saved "
                "facts.",
                "enum": ["add", "remove", "list"],
                "title": "Action",
                "type": "string",
            },
            "scope": {
                "default": "workspace",
                "description": "user: about the "
                "user, shared by "
                "all workspaces; "
                "workspace: about "
                "this project "
                "only.",
                "enum": ["user", "workspace"],
                "title": "Scope",
                "type": "string",
            },
            "text": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "default": None,
                "description": "add: the fact, "
                "one "
                "self-contained "
                "sentence; remove: "
                "part of the text "
                "of the entries to "
                "remove.",
                "title": "Text",
            },
        },
        "required": ["action"],
        "type": "object",
    },
    "hermes_core.tools.patch.PatchArgs": {
        "properties": {
            "path": {"description": "The file to edit.", "title": "Path", "type": "string"},
            "old_text": {
                "description": "The exact text "
                "to replace, "
                "including "
                "whitespace and "
                "indentation, "
                "with enough "
                "surrounding "
                "lines to be "
                "unique in the "
                "file.",
                "title": "Old Text",
                "type": "string",
            },
            "new_text": {
                "description": "The text to put in its place (empty to delete it).",
                "title": "New Text",
                "type": "string",
            },
            "replace_all": {
                "default": False,
                "description": "Replace every occurrence instead of exactly one.",
                "title": "Replace All",
                "type": "boolean",
            },
        },
        "required": ["path", "old_text", "new_text"],
        "type": "object",
    },
    "hermes_core.tools.search.SearchArgs": {
        "properties": {
            "pattern": {
                "description": "Regular "
                "expression "
                "(Rust regex "
                "syntax, like "
                "PCRE without "
                "lookaround); "
                "escape special "
                "characters for "
                "a literal "
                "search, e.g. "
                "`foo\\(` or "
                "`a\\.b`.",
                "title": "Pattern",
                "type": "string",
            },
            "path": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "default": None,
                "description": "File or directory to search; defaults to the workspace root.",
                "title": "Path",
            },
            "glob": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "default": None,
                "description": "Only search files "
                "matching this "
                "glob, e.g. `*.py` "
                "or `src/**/*.ts`; "
                "prefix with `!` "
                "to exclude.",
                "title": "Glob",
            },
            "case_sensitive": {
                "anyOf": [{"type": "boolean"}, {"type": "null"}],
                "default": None,
                "description": "true: "
                "exact "
                "case; "
                "false: "
                "ignore "
                "case; "
                "omitted: "
                "smart "
                "case "
                "(case-insensitive "
                "unless "
                "the "
                "pattern "
                "has an "
                "uppercase "
                "letter).",
                "title": "Case Sensitive",
            },
        },
        "required": ["pattern"],
        "type": "object",
    },
    "hermes_core.tools.session_search.SessionSearchArgs": {
        "properties": {
            "query": {
                "description": "Words to look for; a trailing * matches any word starting so.",
                "title": "Query",
                "type": "string",
            },
            "limit": {
                "default": 10,
                "description": "At most this many matches.",
                "maximum": 50,
                "minimum": 1,
                "title": "Limit",
                "type": "integer",
            },
        },
        "required": ["query"],
        "type": "object",
    },
    "hermes_core.tools.skill.SkillArgs": {
        "properties": {
            "name": {
                "description": "The skill's name, as listed under Skills in the system prompt.",
                "title": "Name",
                "type": "string",
            }
        },
        "required": ["name"],
        "type": "object",
    },
    "hermes_core.tools.terminal.ProcessArgs": {
        "properties": {
            "handle": {
                "description": "The handle terminal returned for a background command, e.g. proc-1.",
                "title": "Handle",
                "type": "string",
            },
            "action": {
                "description": "poll: "
                "whether it "
                "is still "
                "running, its "
                "exit status "
                "and its "
                "output so "
                "far; kill: "
                "stop it (and "
                "everything "
                "it started).",
                "enum": ["poll", "kill"],
                "title": "Action",
                "type": "string",
            },
        },
        "required": ["handle", "action"],
        "type": "object",
    },
    "hermes_core.tools.terminal.TerminalArgs": {
        "properties": {
            "command": {
                "description": "The shell command (bash), run in the workspace root.",
                "title": "Command",
                "type": "string",
            },
            "timeout": {
                "anyOf": [{"exclusiveMinimum": 0, "type": "number"}, {"type": "null"}],
                "default": None,
                "description": "Seconds before the command is killed; default 120, at most 600.",
                "title": "Timeout",
            },
            "background": {
                "default": False,
                "description": "Start "
                "it and "
                "return "
                "at once "
                "with a "
                "handle "
                "(for "
                "servers "
                "and "
                "watchers); "
                "check "
                "on it "
                "with "
                "the "
                "process "
                "tool.",
                "title": "Background",
                "type": "boolean",
            },
            "unconfined": {
                "default": False,
                "description": "Run "
                "outside "
                "the "
                "sandbox. "
                "Only "
                "after "
                "the "
                "sandbox "
                "refused "
                "this "
                "command "
                "(the "
                "result "
                "says "
                "so) and "
                "it "
                "really "
                "needs "
                "that; "
                "the "
                "user is "
                "asked "
                "every "
                "time "
                "unless "
                "they "
                "allowed "
                "it "
                "always.",
                "title": "Unconfined",
                "type": "boolean",
            },
        },
        "required": ["command"],
        "type": "object",
    },
    "hermes_core.tools.todo.TodoArgs": {
        "$defs": {
            "TodoItem": {
                "properties": {
                    "content": {
                        "description": "The step, in a few words.",
                        "minLength": 1,
                        "title": "Content",
                        "type": "string",
                    },
                    "status": {
                        "default": "pending",
                        "description": "Mark one step in_progress while working on it.",
                        "enum": ["pending", "in_progress", "completed"],
                        "title": "Status",
                        "type": "string",
                    },
                    "priority": {
                        "default": "medium",
                        "enum": ["high", "medium", "low"],
                        "title": "Priority",
                        "type": "string",
                    },
                },
                "required": ["content"],
                "title": "TodoItem",
                "type": "object",
            }
        },
        "properties": {
            "items": {
                "description": "The whole plan, in order; replaces the previous one.",
                "items": {"$ref": "#/$defs/TodoItem"},
                "title": "Items",
                "type": "array",
            }
        },
        "required": ["items"],
        "type": "object",
    },
}
