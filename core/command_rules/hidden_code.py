"""Code that cannot be read from the command line: it asks.

A program name the shell computes, `eval "$X"`, a function definition, variables that load
code (`LD_PRELOAD`, `GIT_PAGER=…`), inline code an interpreter runs (`python -c`, here-documents;
read by `hermes_core.command_rules.inline_code`), awk and sed scripts that run commands, and the
options through which ordinary tools run a command given to them (`tar --to-command`,
`ssh -o ProxyCommand`, `vim -c`, `make --eval`).
"""

from __future__ import annotations

import re

from hermes_core.command_rules.inline_code import awk_is_harmless, script_is_harmless, sed_is_harmless
from hermes_core.command_rules.words import Roots, computed_or_outside, has_option, outside, split_words
from hermes_core.shell.programs import (
    ASSIGNMENT,
    CODE_OPTIONS,
    INTERPRETER_CODE_FLAGS,
    Invocation,
    interpreter_family,
)
from hermes_core.shell.tokens import Redirect, Word

# Variables through which a program loads other code than the one named: they ask.
_LOADER_VARIABLES = re.compile(
    r"(LD_PRELOAD|LD_AUDIT|BASH_ENV|ENV|PS4|SHELLOPTS|BASHOPTS|PERL5OPT|RUBYOPT|PYTHONSTARTUP|"
    r"BASH_FUNC_\w+|GIT_CONFIG_\w+|GIT_CONFIG|GIT_EXEC_PATH|GIT_TEMPLATE_DIR)(\[[^]]*\])?\+?="
)
# Variables whose value is a command line some program runs: the value is read as code.
_COMMAND_VARIABLES = re.compile(
    r"(GIT_SSH|GIT_SSH_COMMAND|GIT_EXTERNAL_DIFF|GIT_PAGER|GIT_EDITOR|GIT_SEQUENCE_EDITOR|GIT_ASKPASS|"
    r"SSH_ASKPASS|GIT_PROXY_COMMAND|PAGER|EDITOR|VISUAL|MANPAGER|SYSTEMD_PAGER|BROWSER|PROMPT_COMMAND|"
    r"LESSOPEN|LESSCLOSE|RUSTC_WRAPPER|CARGO_TARGET_\w+_RUNNER)\+?="
)
_NODE_LOADERS = re.compile(r"(^|\s)(-r|--require|--import|--loader|--experimental-loader|-e|--eval|-p)\b")
_DECLARERS = frozenset({"export", "declare", "typeset", "local", "readonly", "env"})


def variable_code(words: list[Word]) -> tuple[bool, list[str]]:
    """Whether the command sets a variable that loads code it cannot check (`LD_PRELOAD=…`,
    `export BASH_ENV=…`), and the command lines it puts in variables programs run
    (`GIT_PAGER='…' git log`), to be checked as code."""
    commands: list[str] = []
    declaring = True
    for word in words:
        text = word.text
        if ASSIGNMENT.match(text) and not word.subs and ("$(" in text or "`" in text):
            return True, []  # code kept as text: `$((x))`, `[[ $x -eq 1 ]]` and `${x@P}` run it
        if declaring and not word.literal and "$" in text.partition("=")[0] and words[0].text in _DECLARERS:
            return True, []  # `declare "$X"`: which variable is set cannot be seen
        if declaring and ASSIGNMENT.match(text):
            value = text.partition("=")[2]
            if _LOADER_VARIABLES.match(text):
                return True, []
            if text.startswith("NODE_OPTIONS") and (not word.literal or _NODE_LOADERS.search(value)):
                return True, []
            if _COMMAND_VARIABLES.match(text):
                if not word.literal:
                    return True, []
                commands.append(value)
        declaring = bool(ASSIGNMENT.match(text)) or text in _DECLARERS or (declaring and text.startswith("-"))
    return False, commands


# An array subscript holding a command substitution, kept as text: bash expands it wherever
# it takes a variable name or an arithmetic operand (`printf -v 'a[$(cmd)]'`, `read
# 'a[$(cmd)]'`, `let`, `[[ 1 -eq 'a[$(cmd)]' ]]`, `declare`, `unset`, `[[ -v … ]]`).
_SUBSCRIPT_CODE = re.compile(r"\[[^\]]*(\$\(|`)")


def subscript_runs_code(inv: Invocation, roots: Roots) -> bool:
    return any(_SUBSCRIPT_CODE.search(word.text) for word in inv.words[1:])


def defines_function(inv: Invocation, roots: Roots) -> bool:
    return inv.program in ("function", "coproc", "alias") or (inv.program == "enable" and "-f" in inv.args)


def eval_unseen(inv: Invocation, roots: Roots) -> bool:
    return inv.program == "eval" and any(not w.literal for w in inv.words[1:])


def sources_unseen(inv: Invocation, roots: Roots) -> bool:
    if inv.program not in ("source", "."):
        return False
    operands = split_words(inv)[1]
    return not operands or computed_or_outside(operands[0], roots)


def code_argument(inv: Invocation) -> tuple[str | None, Word | None]:
    """The interpreter family and the word holding inline code (`-c CODE`, `-e CODE`,
    `-cCODE`, `--eval CODE`), or the script operand (family, None as code)."""
    family = interpreter_family(inv.program)
    if family is None:
        return None, None
    flags = INTERPRETER_CODE_FLAGS[family].replace("m", "")
    words = list(inv.words[1:])
    if inv.program in ("deno", "bun") and words and words[0].text == "eval":
        return family, words[1] if len(words) > 1 else Word("")
    skip = False
    for i, word in enumerate(words):
        text = word.text
        if skip:
            skip = False
            continue
        if text in _INTERPRETER_VALUE_OPTIONS:
            skip = True
            continue
        if text == "--" or not text.startswith(("-", "+")) or text == "-":
            return family, None
        if family == "python" and text.startswith("-m"):
            return family, None
        if text in CODE_OPTIONS or text.partition("=")[0] in CODE_OPTIONS:
            if "=" in text:
                return family, Word(text.partition("=")[2], expansions=word.expansions)
            return family, words[i + 1] if i + 1 < len(words) else Word("")
        if not text.startswith("--"):
            letters = text[1:]
            hit = next((j for j, c in enumerate(letters) if c in flags), None)
            if hit is not None:
                attached = letters[hit + 1 :]
                if attached and family not in ("shell", "node"):  # node takes no `-eCODE`
                    return family, Word(attached, expansions=word.expansions)
                return family, words[i + 1] if i + 1 < len(words) else Word("")
    return family, None


_INTERPRETER_VALUE_OPTIONS = frozenset(
    {"-o", "-O", "+o", "+O", "-W", "-X", "--rcfile", "--init-file", "-I", "-C", "--title", "-x"}
)
# Options that load code named on the command line before anything else runs.
_MODULE_LOADERS = re.compile(r"-[mM]|-r|--require|--import|--loader|--experimental-loader|-I")


def script_operand(inv: Invocation) -> Word | None:
    """The script file an interpreter runs (`bash x.sh`, `python tool.py`), if any."""
    family = interpreter_family(inv.program)
    if family is None:
        return None
    words = list(inv.words[1:])
    i = 0
    while i < len(words):
        text = words[i].text
        if text == "--":
            return words[i + 1] if i + 1 < len(words) else None
        if not words[i].literal or not text.startswith(("-", "+")) or text == "-":
            return words[i] if text != "-" else None
        if family == "python" and text.startswith("-m"):
            return None
        i += (
            2
            if text in ("-o", "-O", "+o", "+O", "-W", "-X", "--rcfile", "--init-file", "-r", "--require")
            else 1
        )
    return None


def inline_code_unseen(inv: Invocation) -> str | None:
    family, code = code_argument(inv)
    if family is None:
        return None
    loads = family in ("perl", "ruby", "node") and any(
        _MODULE_LOADERS.match(w.text) for w in inv.words[1:] if w.text.startswith("-")
    )
    if loads and code is not None:
        return f"runs inline {family} code with modules loaded from the command line (-M, -r)"
    if family == "python" and _python_module_extracts(inv):
        return "extracts an archive with python -m zipfile/tarfile"
    if code is not None:
        if not code.literal:
            return f'runs {family} code the shell computes ({inv.program} -c "$X")'
        if family != "shell" and not script_is_harmless(family, code.text):
            return f"runs inline {family} code that may touch files, processes or the network"
        return None  # shell code is read as commands by the caller
    script = script_operand(inv)
    if script is not None and not script.literal:
        return f"runs a script the shell computes ({inv.program} $X, <(…))"
    if script is not None and script.text.startswith(("/dev/", "/proc/")):
        return f"runs code it reads from a device or stream ({inv.program} /dev/stdin)"
    return None


def _python_module_extracts(inv: Invocation) -> bool:
    texts = list(inv.args)
    for i, text in enumerate(texts):
        if text == "-m" and i + 1 < len(texts) and texts[i + 1] in ("zipfile", "tarfile"):
            return any(t in ("-e", "--extract") for t in texts[i + 2 :])
    return False


def interpreter_stdin_unseen(inv: Invocation, redirects: list[Redirect]) -> str | None:
    """`python3 <<EOF … EOF`, `perl <<< '…'`: the code comes from a here-document."""
    family = interpreter_family(inv.program)
    if family is None or family == "shell":
        return None
    for redirect in redirects:
        if redirect.op == "<<<":
            code, visible = redirect.target.text, redirect.target.literal
        elif redirect.body is not None:
            code, visible = redirect.body, True
        else:
            continue
        if not visible or not script_is_harmless(family, code):
            return f"runs {family} code from a here-document that may touch files or processes"
    return None


def awk_unseen(inv: Invocation, roots: Roots) -> bool:
    if not re.fullmatch(r"[gmn]?awk|busybox-awk", inv.program):
        return False
    words = list(inv.words[1:])
    i = 0
    while i < len(words):
        text = words[i].text
        if text in ("-f", "--file", "-E", "--exec"):
            return False  # the program is a file; running a file is like `python x.py`
        if text in ("-F", "-v", "--assign", "--field-separator") and words[i].literal:
            i += 2
            continue
        if text.startswith("-") and words[i].literal and text != "-":
            i += 1
            continue
        return not words[i].literal or not awk_is_harmless(text)
    return False


def sed_unseen(inv: Invocation, roots: Roots) -> bool:
    if inv.program not in ("sed", "gsed"):
        return False
    words = list(inv.words[1:])
    scripts: list[Word] = []
    i = 0
    while i < len(words):
        text = words[i].text
        if text in ("-e", "--expression") and i + 1 < len(words):
            scripts.append(words[i + 1])
            i += 2
            continue
        if text.startswith("--expression="):
            scripts.append(Word(text.partition("=")[2], expansions=words[i].expansions))
        elif text.startswith("-e") and len(text) > 2:
            scripts.append(Word(text[2:], expansions=words[i].expansions))
        i += 1
    if not scripts:
        _, operands = split_words(inv, frozenset({"-f", "--file", "-l", "--line-length"}))
        scripts = operands[:1]
    return any(not w.literal or not sed_is_harmless(w.text) for w in scripts)


_TAR_CODE = (
    "--to-command",
    "--use-compress-program",
    "--checkpoint-action",
    "--info-script",
    "--new-volume-script",
    "--rsh-command",
    "--rmt-command",
    "--index-file",
)


def tar_runs_code(inv: Invocation, roots: Roots) -> bool:
    if inv.program not in ("tar", "gtar", "bsdtar"):
        return False
    options = [t for t in inv.args if t.startswith("-")]
    if has_option(options, *_TAR_CODE):
        return True
    return any(t in ("-I", "-F") for t in inv.args)


def editor_runs_commands(inv: Invocation, roots: Roots) -> bool:
    if inv.program in ("vim", "vi", "nvim", "ex", "view", "gvim", "vimdiff", "rvim"):
        return any(t in ("-c", "-S", "--cmd", "-s", "-u") or t.startswith("+") for t in inv.args)
    if inv.program == "emacs":
        return any(
            t.startswith(("--eval", "-l", "--load", "-f", "--funcall", "--batch", "--script", "-x"))
            for t in inv.args
        )
    if inv.program in ("gdb", "lldb"):
        return any(t.startswith(("-ex", "-x", "--batch", "-batch", "-o", "-s", "--source")) for t in inv.args)
    return False


def schedules_code(inv: Invocation, roots: Roots) -> bool:
    if inv.program == "crontab":
        return not any(t == "-l" for t in inv.args)
    return inv.program in ("at", "batch", "parallel", "sem")


def sqlite_shells_out(inv: Invocation, roots: Roots) -> bool:
    return inv.program.startswith("sqlite") and any(
        re.search(r"(^|\s|;)\.(shell|system|sh)\b", t) for t in inv.args
    )


def container_mounts_host(inv: Invocation, roots: Roots) -> bool:
    """`docker run -v /:/host …` hands the container the host's files."""
    if inv.program not in ("docker", "podman", "nerdctl"):
        return False
    words = list(inv.words[1:])
    for i, word in enumerate(words):
        text = word.text
        if text == "--privileged" or text.startswith(("--pid=host", "--cap-add")):
            return True
        value = None
        if text in ("-v", "--volume", "--mount") and i + 1 < len(words):
            value = words[i + 1]
        elif text.startswith(("--volume=", "--mount=")):
            value = Word(text.partition("=")[2], expansions=word.expansions)
        if value is not None and _mount_reaches_host(value, roots):
            return True
    return False


def _mount_reaches_host(value: Word, roots: Roots) -> bool:
    if not value.literal:
        working = re.match(r"(\$PWD|\$\{PWD\}|\$\(pwd\))(/[\w./-]*)?:", value.text)
        return not (working and value.expansions <= {"parameter", "command"} and ".." not in value.text)
    found = re.search(r"(?:source|src)=([^,]*)", value.text)
    source = found.group(1) if found else value.text.split(":", 1)[0]
    return source in (".", "..", "~") or (source.startswith(("/", "~", "..")) and outside(source, roots))


def runs_given_command(inv: Invocation, roots: Roots) -> bool:
    """Options through which ordinary tools run a command given to them."""
    texts = list(inv.args)
    program = inv.program
    if program in ("ssh", "scp", "sftp", "autossh"):
        joined = " ".join(texts).lower()
        return any(k in joined for k in ("proxycommand", "localcommand", "knownhostscommand", "match exec"))
    if program == "rsync":
        return any(t in ("-e", "--rsh") or t.startswith(("--rsh=", "--rsync-path")) for t in texts)
    if program == "man":
        return any(t.startswith(("-P", "--pager", "-H", "--html")) for t in texts)
    if program == "zip":
        return any(t.startswith(("-TT", "--unzip-command")) for t in texts)
    if program in ("make", "gmake"):
        for i, t in enumerate(texts):
            if t.startswith(("--eval", "-E")) or t.startswith("SHELL="):
                return True
            reads_stdin = i + 1 < len(texts) and texts[i + 1] in ("-", "/dev/stdin")
            if t in ("-f", "--file", "--makefile") and reads_stdin:
                return True
        return False
    if program == "hash":
        return "-p" in texts
    if program in ("nc", "ncat", "netcat", "nc.traditional", "nc.openbsd"):
        return any(
            t in ("-e", "-c", "--exec", "--sh-exec", "--lua-exec") or t.startswith("--exec") for t in texts
        )
    if program == "socat":
        return any(re.match(r"(EXEC|SYSTEM|SHELL):", t, re.IGNORECASE) for t in texts)
    if program == "fuser":
        return any(t.startswith("-") and "k" in t for t in texts)
    if program in ("blkdiscard", "cryptsetup", "hdparm", "sg_format", "mkswap", "losetup"):
        return True
    if program == "fallocate":
        return any(
            t in ("-p", "-c", "-d", "-z", "--punch-hole", "--collapse-range", "--dig-holes") for t in texts
        )
    if program == "npm":
        joined = " ".join(texts)
        return "set-script" in joined or bool(
            re.search(r"\bpkg set scripts\.|\bconfig set (script-shell|shell)", joined)
        )
    return False


def carrier_code(inv: Invocation, roots: Roots) -> bool:
    """`script -qc CODE`, `sg group CODE`: code handed over in a spelling unwrap does not read."""
    texts = list(inv.args)
    if inv.program == "script":
        return any(t.startswith("-") and not t.startswith("--") and "c" in t for t in texts) or any(
            t.startswith("--command") for t in texts
        )
    if inv.program == "sg":
        return len(texts) > 1
    return False


def program_computed(inv: Invocation, roots: Roots) -> bool:
    return not inv.words[0].literal
