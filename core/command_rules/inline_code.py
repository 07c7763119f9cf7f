"""Whether code handed to an interpreter on the command line can be shown harmless.

`python -c 'print(1)'` is everyday; `python -c 'import shutil; shutil.rmtree(…)'` is not.
Python code is read with `ast` and passes only when everything it calls is on an
allowlist (printing, arithmetic, json, re, reading `sys.stdin`, …): a name or module the
list does not know makes it unproven, so it asks. Perl, Ruby, JavaScript, PHP, awk and
sed have no reader here: their code passes only when it mentions none of the ways those
languages reach files, processes, the network or their own evaluator, and uses none of
the tricks that build such a name at run time (escapes, computed member access).
"""

from __future__ import annotations

import ast
import importlib
import re
import types


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


_SAFE_BUILTINS = _names(
    "print len range sorted sum min max str int float bool list dict set tuple frozenset "
    "enumerate zip repr abs round any all isinstance map filter format hex oct bin ord chr "
    "reversed divmod pow hash iter next slice bytes bytearray complex ascii callable input "
    "True False None Exception ValueError KeyError IndexError TypeError StopIteration "
    "SystemExit"
)
# Modules whose every public name only computes, formats or reads standard input.
_SAFE_MODULES = _names(
    "json math re string textwrap datetime time random statistics collections itertools "
    "decimal fractions base64 binascii hashlib struct uuid unicodedata calendar heapq bisect "
    "keyword pprint csv html zlib difflib secrets enum copy numbers ipaddress shlex fnmatch "
    "colorsys array tomllib"
)
# Modules that can also reach files or processes: only these names of them.
_LIMITED_MODULES: dict[str, frozenset[str]] = {
    "sys": _names(
        "version version_info platform executable path argv stdin stdout stderr maxsize "
        "byteorder implementation prefix base_prefix exec_prefix getdefaultencoding "
        "getfilesystemencoding getrecursionlimit flags float_info hexversion api_version exit"
    ),
    "os": _names(
        "getcwd environ getenv sep pathsep linesep name path cpu_count getpid getppid getuid "
        "getgid uname curdir pardir devnull get_terminal_size"
    ),
    "os.path": _names(
        "join exists isdir isfile islink abspath realpath relpath basename dirname splitext "
        "split expanduser normpath getsize getmtime sep commonpath"
    ),
    "platform": _names(
        "system machine python_version python_implementation release version node platform "
        "processor architecture uname"
    ),
}
# Names that describe a module without running anything of it: `print(torch.__version__)`.
_DESCRIPTIVE_ATTRIBUTES = frozenset({"__version__", "__file__", "__name__", "__doc__", "VERSION", "version"})
# Frames, code objects and tracebacks reach every global of the interpreter.
_FRAME_ATTRIBUTE = re.compile(r"(f|gi|cr|ag|tb|co)_\w+|mro|func_globals")
_ALLOWED_NODES = (
    ast.Module,
    ast.Expr,
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.For,
    ast.While,
    ast.If,
    ast.Break,
    ast.Continue,
    ast.Pass,
    ast.Import,
    ast.ImportFrom,
    ast.alias,
    ast.Call,
    ast.Attribute,
    ast.Name,
    ast.Constant,
    ast.JoinedStr,
    ast.FormattedValue,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Subscript,
    ast.Slice,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.comprehension,
    ast.Starred,
    ast.keyword,
    ast.Lambda,
    ast.arguments,
    ast.arg,
    ast.Try,
    ast.ExceptHandler,
    ast.Raise,
    ast.Assert,
    ast.expr_context,
    ast.operator,
    ast.unaryop,
    ast.boolop,
    ast.cmpop,
)


def python_is_harmless(code: str) -> bool:
    """Whether the Python code provably only computes, prints and reads standard input."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    modules: dict[str, str] = {}  # local name -> module it names
    bound: set[str] = set()
    nodes = list(ast.walk(tree))
    for node in nodes:
        if not isinstance(node, _ALLOWED_NODES):
            return False
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is None and "." in alias.name:
                    modules[alias.name.partition(".")[0]] = alias.name.partition(".")[0]
                else:
                    modules[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom):
            if not _imports_only_safe_names(node):
                return False
            bound.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    if bound & set(modules):
        return False  # a module name rebound: `os = …` would hide what a call reaches
    parents = {id(child): parent for parent in nodes for child in ast.iter_child_nodes(parent)}
    for node in nodes:
        if (
            isinstance(node, ast.Attribute)
            and (node.attr.startswith("_") or _FRAME_ATTRIBUTE.match(node.attr))
            and node.attr not in _DESCRIPTIVE_ATTRIBUTES
        ):
            return False  # private and special names lead to the interpreter's insides
        if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load):
            continue
        if node.id in modules:
            if not _module_use_is_harmless(modules[node.id], node, parents):
                return False
        elif node.id not in bound and node.id not in _SAFE_BUILTINS:
            return False
    return True


def _imports_only_safe_names(node: ast.ImportFrom) -> bool:
    module = node.module or ""
    if node.level or any(alias.name == "*" for alias in node.names):
        return False
    if module in _SAFE_MODULES:
        return True
    allowed = _LIMITED_MODULES.get(module)
    return allowed is not None and all(alias.name in allowed for alias in node.names)


def _module_use_is_harmless(module: str, name: ast.Name, parents: dict[int, ast.AST]) -> bool:
    """A module's name may only start an attribute chain into names the allowlists know."""
    parent = parents.get(id(name))
    if not isinstance(parent, ast.Attribute):
        return False  # the module as a value: passed around, anything could be reached
    top = module.partition(".")[0]
    if top in _SAFE_MODULES:
        return not _names_a_module(top, parent.attr)  # `uuid.os`, `json.codecs` lead out
    if top in _LIMITED_MODULES and parent.attr in _LIMITED_MODULES[top]:
        pass
    elif parent.attr in _DESCRIPTIVE_ATTRIBUTES:
        grand = parents.get(id(parent))
        return not (isinstance(grand, (ast.Call, ast.Attribute, ast.Subscript)) and _leads(grand, parent))
    else:
        return False
    if top == "os" and parent.attr == "path":
        grand = parents.get(id(parent))
        return isinstance(grand, ast.Attribute) and grand.attr in _LIMITED_MODULES["os.path"]
    return True


def _names_a_module(module: str, attribute: str) -> bool:
    """Whether `module.attribute` is itself a module (one the safe module imported)."""
    try:
        value = getattr(importlib.import_module(module), attribute, None)
    except ImportError:
        return True
    return isinstance(value, types.ModuleType)


def _leads(outer: ast.AST, inner: ast.AST) -> bool:
    """Whether `inner` is what `outer` calls, takes an attribute of or indexes."""
    return getattr(outer, "func", None) is inner or getattr(outer, "value", None) is inner


# --------------------------------------------------------------------------------------
# Languages without a reader here: no mention of what reaches outside, no run-time tricks

_OBFUSCATION = r"\\x|\\u|\\[0-7]{2}|\\c|chr\s*\(|pack\s*\(|fromCharCode|atob|base64|decode|unhex|hex2bin"
_REACHES_OUT: dict[str, re.Pattern[str]] = {
    "perl": re.compile(
        r"\b(system|exec|fork|unlink|rmdir|rename|open|sysopen|opendir|kill|chmod|chown|truncate|eval|do|"
        r"require|use|no|syscall|qx|glob|link|symlink|mkdir|utime|chdir|dump|socket|connect|pipe|readpipe|"
        r"File|IO|POSIX|CORE|Socket|local\s*\$0|__END__|__DATA__|sub)\b|`|<\s*\*|[&*]\s*\{|&\s*\$|->\s*\$|::|"
        r"[/}#|!][a-z]*e[a-z]*\s*($|;|\})|" + _OBFUSCATION
    ),
    "ruby": re.compile(
        r"\b(system|exec|spawn|fork|File|FileUtils|Dir|IO|Kernel|open|eval|instance_eval|class_eval|"
        r"module_eval|instance_exec|send|public_send|__send__|method|require|require_relative|load|Process|"
        r"Open3|PTY|syscall|trap|Pathname|ObjectSpace|binding|const_get|define_method|Object|Socket|"
        r"TCPSocket|Net|URI|exit!|at_exit|Marshal|Signal|to_proc|to_sym|intern|self|instance_variable_\w+|"
        r"public_method|singleton_\w+|Method|UnboundMethod|Class|Module|ENV\[.*\]\s*=)\b|`|%x|" + _OBFUSCATION
    ),
    "node": re.compile(
        r"\b(require|import|child_process|fs|eval|Function|constructor|globalThis|global|module|exports|"
        r"Deno|Bun|__proto__|prototype|Reflect|Proxy|setTimeout|setInterval|setImmediate|WebAssembly|"
        r"Worker|exec\w*|spawn\w*|fork|this|arguments|callee|dlopen|binding)\b|process\s*(\[|\.\s*(?!(version|versions|platform|arch|argv|"
        r"env|exitCode|stdout\s*\.\s*write|stdin|cwd|uptime|pid|memoryUsage|hrtime|exit)\b))|"
        r"[\w\])'\"`]\s*\[\s*(?!\d+\s*\])|" + _OBFUSCATION
    ),
}


# PHP calls only these functions, and only by name: anything else (a callback, a string
# called as a function, `new`) may reach `system`.
_PHP_CALLS = _names(
    "echo print printf sprintf var_dump var_export print_r json_encode json_decode strlen count "
    "phpversion php_uname date time microtime str_repeat implode explode trim rtrim ltrim strtoupper "
    "strtolower ucfirst round floor ceil max min abs array_sum array_keys array_values range intdiv "
    "str_replace substr strpos number_format memory_get_usage extension_loaded function_exists "
    "ini_get gettype is_array is_string is_int isset empty array sort"
)
_PHP_CALL = re.compile(r"([A-Za-z_\\][\w\\]*)\s*\(")
_PHP_INDIRECT = re.compile(r"\$\w+\s*\(|[)\]}'\"]\s*\(|`|\bnew\b|\$\$|::|->|" + _OBFUSCATION)


def _php_is_harmless(code: str) -> bool:
    if _PHP_INDIRECT.search(code):
        return False
    return all(name.lower() in _PHP_CALLS for name in _PHP_CALL.findall(code))


def script_is_harmless(family: str, code: str) -> bool:
    """Whether inline code for `family` ("python", "perl", "ruby", "node", "php") can be
    shown harmless; any other interpreter's code never can."""
    if family == "python":
        return python_is_harmless(code)
    if family == "php":
        return _php_is_harmless(code)
    pattern = _REACHES_OUT.get(family)
    return pattern is not None and not pattern.search(code)


_AWK_REACHES_OUT = re.compile(
    r"\bsystem\b|(?<!\|)\|(?!\|)|@load|@include|\bprintf?\b[^;{}\n]*?[^=!<>]>|" + _OBFUSCATION
)


def awk_is_harmless(program: str) -> bool:
    """No `system()`, no pipes to or from commands, no printing into files."""
    return not _AWK_REACHES_OUT.search(program)


_SED_SUBSTITUTION = re.compile(r"([sy])(.)((?:\\.|(?!\2).)*)\2((?:\\.|(?!\2).)*)\2([A-Za-z0-9]*)", re.DOTALL)
_SED_COMMAND = re.compile(
    r"(^|[;\n{}!])\s*(?:[\d$]+|/(?:\\.|[^/])*/)?(?:\s*,\s*(?:[\d$]+|/(?:\\.|[^/])*/))?\s*!?\s*[ewW]"
)


def sed_is_harmless(script: str) -> bool:
    """No `e` (run a command) and no `w` (write a file), as a command or an `s///` flag."""
    for match in _SED_SUBSTITUTION.finditer(script):
        if match.group(1) == "s" and set(match.group(5)) & {"e", "w", "W"}:
            return False
    stripped = _SED_SUBSTITUTION.sub("s", script)
    return not _SED_COMMAND.search(stripped)
