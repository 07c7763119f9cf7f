"""Rules that ask when a command cannot be shown harmless.

`core.command_rules` names known disasters (`rm -rf /`, `mkfs`, a force push). These
rules ask about what cannot be seen from the command line: a risky program (`rm`, `mv`,
`dd`, `git reset`, …) whose operands the shell computes (`$X`, `$(…)`, globs, `{a,b}`,
`~`) or that reach outside the working directory; code handed over where it cannot be
read (`eval "$X"`, `bash -c "$X"`, inline Python that imports `shutil`, a function
definition, `xargs rm`); and the options through which ordinary tools run other code
(`git -c core.pager=…`, `tar --to-command`, `sed 's/x/y/e'`, `awk 'BEGIN{system(…)}'`).
Each rule is a description the user sees and a test on one invocation.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass

from core.inline_code import awk_is_harmless, script_is_harmless, sed_is_harmless
from core.rule_words import (
    HARMLESS_TARGETS,
    WORKSPACE_ROOTS,
    beyond_working_directory,
    computed_or_outside,
    has_option,
    long_options,
    names,
    outside,
    short_letters,
    split_words,
)
from core.shell.programs import (
    ASSIGNMENT,
    CODE_OPTIONS,
    INTERPRETER_CODE_FLAGS,
    Invocation,
    interpreter_family,
)
from core.shell.words import Redirect, Word

# --------------------------------------------------------------------------------------
# Risky programs on operands that cannot be seen, or that reach outside

_DELETERS = frozenset(
    {"rm", "rmdir", "unlink", "srm", "rimraf", "del", "del-cli", "trash", "trash-put", "wipe"}
)
_RM_LONG = (
    "--recursive",
    "--force",
    "--no-preserve-root",
    "--preserve-root",
    "--dir",
    "--interactive",
    "--one-file-system",
    "--verbose",
    "--help",
    "--version",
)
_MOVERS = frozenset({"mv", "cp", "ln", "install", "rsync", "scp"})
_OWNERSHIP = frozenset({"chmod", "chown", "chgrp", "chattr", "setfacl"})
RISKY_PROGRAMS = (
    _DELETERS
    | _MOVERS
    | _OWNERSHIP
    | frozenset({"shred", "truncate", "dd", "find", "git", "tee", "sed", "perl", "kill", "mkfs", "fallocate"})
)


def rm_flags(inv: Invocation) -> set[str]:
    """`r`, `f` and `no-preserve-root` as given in any spelling (`-Rf`, `--recu`, `--forc`)."""
    flags: set[str] = set()
    options, _ = split_words(inv)
    letters = short_letters(options)
    if letters & {"r", "R"}:
        flags.add("r")
    if "f" in letters:
        flags.add("f")
    for option in options:
        for name in long_options(option, _RM_LONG):
            if name == "--recursive":
                flags.add("r")
            elif name == "--force":
                flags.add("f")
            elif name == "--no-preserve-root":
                flags.add("no-preserve-root")
    return flags


def _deletes_computed(inv: Invocation) -> bool:
    return inv.program in _DELETERS and any(not w.literal for w in split_words(inv)[1])


def _deletes_outside(inv: Invocation) -> bool:
    return inv.program in _DELETERS and any(outside(w.text) for w in split_words(inv)[1])


def _deletes_workspace(inv: Invocation) -> bool:
    return inv.program in _DELETERS and any(_workspace_root(w.text) for w in split_words(inv)[1])


def _workspace_root(text: str) -> bool:
    """`rm -rf /home/me/project` (or a parent of it): the workspace itself, by its absolute path."""
    if not text.startswith("/"):
        return False
    norm = posixpath.normpath(text)
    return any(
        norm == root or root.startswith(norm.rstrip("/") + "/")
        for root in map(posixpath.normpath, WORKSPACE_ROOTS.get())
    )


def _fed_risky(inv: Invocation) -> bool:
    return inv.fed and (inv.program in RISKY_PROGRAMS or interpreter_family(inv.program) is not None)


def _shreds(inv: Invocation) -> bool:
    return inv.program == "shred"


def _truncates(inv: Invocation) -> bool:
    return inv.program == "truncate"


def _dd_writes(inv: Invocation) -> bool:
    return inv.program == "dd" and any(
        a.startswith("of=") and a[3:] not in HARMLESS_TARGETS for a in inv.args
    )


_MOVER_VALUE_OPTIONS = frozenset(
    {"-t", "-S", "--suffix", "-m", "--mode", "-o", "-g", "--owner", "--group", "-e"}
)


def _destination(inv: Invocation) -> tuple[list[Word], Word | None]:
    """Sources and destination of mv/cp/ln/install (`-t dir` or the last operand)."""
    words = list(inv.words[1:])
    for i, word in enumerate(words):
        if word.text in ("-t", "--target-directory") and i + 1 < len(words):
            return split_words(inv, _MOVER_VALUE_OPTIONS)[1], words[i + 1]
        if word.text.startswith("--target-directory="):
            return split_words(inv, _MOVER_VALUE_OPTIONS)[1], Word(
                word.text.partition("=")[2], expansions=word.expansions
            )
    operands = split_words(inv, _MOVER_VALUE_OPTIONS)[1]
    return (operands[:-1], operands[-1]) if len(operands) > 1 else (operands, None)


def _moves_unseen(inv: Invocation) -> bool:
    """mv takes its sources away and any of the four overwrites their destination."""
    if inv.program not in _MOVERS:
        return False
    sources, destination = _destination(inv)
    if inv.program == "rsync":
        options = split_words(inv)[0]
        deletes = any(o.startswith(("--del", "--remove-source")) for o in options)
        return deletes or (destination is not None and computed_or_outside(destination))
    if inv.program in ("mv", "ln") and any(computed_or_outside(w) for w in sources):
        return True
    return destination is not None and (
        computed_or_outside(destination) or destination.text.startswith("/dev/")
    )


def _ownership_unseen(inv: Invocation) -> bool:
    if inv.program not in _OWNERSHIP:
        return False
    options, operands = split_words(inv)
    recursive = "R" in short_letters(options) or any(long_options(o, ("--recursive",)) for o in options)
    reaches = computed_or_outside if recursive else beyond_working_directory  # `chmod +x *.sh` stays here
    return any(reaches(w) for w in operands[1:])


_FIND_FILTERS = names(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -mtime -mmin -atime -amin -ctime "
    "-cmin -newer -size -empty -lname -ilname -inum -samefile"
)
_FIND_ACTIONS = frozenset({"-delete", "-exec", "-execdir", "-ok", "-okdir"})
_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls"})


def _find_unseen(inv: Invocation) -> bool:
    if inv.program != "find":
        return False
    words = list(inv.words[1:])
    texts = [w.text for w in words]
    if any(t in _FIND_WRITES for t in texts):
        return True
    if not any(t in _FIND_ACTIONS for t in texts):
        return False
    i = 0
    while i < len(words) and (texts[i] in ("-H", "-L", "-P", "-D") or re.fullmatch(r"-O\d", texts[i])):
        i += 2 if texts[i] == "-D" else 1
    starts = []
    while i < len(words) and not texts[i].startswith(("-", "(", "!", ")")):
        starts.append(words[i])
        i += 1
    if any(computed_or_outside(w) for w in starts):
        return True
    # `find . -delete`, with nothing to narrow it (`-name '*'` does not), is `rm -rf .`
    return not any(
        t in _FIND_FILTERS and (j + 1 >= len(texts) or texts[j + 1] not in ("*", ".*", "**"))
        for j, t in enumerate(texts)
    )


def _in_place_unseen(inv: Invocation) -> bool:
    """`sed -i`/`perl -i` edit their operands: outside or computed ones ask."""
    if inv.program not in ("sed", "perl"):
        return False
    options, operands = split_words(inv, frozenset({"-e", "-f", "--expression", "--file"}))
    in_place = any(
        o.startswith("-i") or o.startswith("--in-place") or ("i" in o[1:] and not o.startswith("--"))
        for o in options
    )
    if not in_place:
        return False
    files = operands if inv.program == "perl" or _sed_has_expression(options) else operands[1:]
    return any(beyond_working_directory(w) for w in files)


def _sed_has_expression(options: list[str]) -> bool:
    return any(o in ("-e", "--expression", "-f", "--file") or o.startswith("--expression=") for o in options)


def _tee_unseen(inv: Invocation) -> bool:
    return inv.program == "tee" and any(computed_or_outside(w) for w in split_words(inv)[1])


# --------------------------------------------------------------------------------------
# Code that cannot be read here

_PROGRAM_EXPANSIONS = "a program name the shell computes ($X, $(…), `…`, $'…', globs, {a,b})"
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


def _defines_function(inv: Invocation) -> bool:
    return inv.program in ("function", "coproc", "alias") or (inv.program == "enable" and "-f" in inv.args)


def _eval_unseen(inv: Invocation) -> bool:
    return inv.program == "eval" and any(not w.literal for w in inv.words[1:])


def _sources_unseen(inv: Invocation) -> bool:
    if inv.program not in ("source", "."):
        return False
    operands = split_words(inv)[1]
    return not operands or computed_or_outside(operands[0])


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


def _awk_unseen(inv: Invocation) -> bool:
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


def _sed_unseen(inv: Invocation) -> bool:
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


def _tar_runs_code(inv: Invocation) -> bool:
    if inv.program not in ("tar", "gtar", "bsdtar"):
        return False
    options = [t for t in inv.args if t.startswith("-")]
    if has_option(options, *_TAR_CODE):
        return True
    return any(t in ("-I", "-F") for t in inv.args)


def _editor_runs_commands(inv: Invocation) -> bool:
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


def _schedules_code(inv: Invocation) -> bool:
    if inv.program == "crontab":
        return not any(t == "-l" for t in inv.args)
    return inv.program in ("at", "batch", "parallel", "sem")


def _sqlite_shells_out(inv: Invocation) -> bool:
    return inv.program.startswith("sqlite") and any(
        re.search(r"(^|\s|;)\.(shell|system|sh)\b", t) for t in inv.args
    )


def _container_mounts_host(inv: Invocation) -> bool:
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
        if value is not None and _mount_reaches_host(value):
            return True
    return False


def _mount_reaches_host(value: Word) -> bool:
    if not value.literal:
        working = re.match(r"(\$PWD|\$\{PWD\}|\$\(pwd\))(/[\w./-]*)?:", value.text)
        return not (working and value.expansions <= {"parameter", "command"} and ".." not in value.text)
    found = re.search(r"(?:source|src)=([^,]*)", value.text)
    source = found.group(1) if found else value.text.split(":", 1)[0]
    return source in (".", "..", "~") or (source.startswith(("/", "~", "..")) and outside(source))


def _runs_given_command(inv: Invocation) -> bool:
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


def _kills_computed(inv: Invocation) -> bool:
    if inv.program not in ("kill", "pkill", "killall"):
        return False
    operands = [w for w in inv.words[1:] if not (w.literal and w.text.startswith("-"))]
    return any(not w.literal or w.text == "0" for w in operands)


_OUTPUT_OPTIONS: dict[str, tuple[str, ...]] = {
    "curl": ("-o", "--output", "--output-dir"),
    "wget": ("-O", "--output-document", "-P", "--directory-prefix", "-o", "--output-file", "-a"),
    "sort": ("-o", "--output"),
    "shuf": ("-o", "--output"),
    "patch": ("-o", "--output"),
    "iconv": ("-o", "--output"),
    "openssl": ("-out",),
    "git": ("--output",),
    "tar": ("-C", "--directory"),
    "unzip": ("-d",),
    "cmake": (),
}


def _writes_through_option(inv: Invocation) -> bool:
    """`curl -o ~/.bashrc`, `sort -o ~/x`, `tar -xf a.tar -C ~`, `unzip a.zip -d /`."""
    names = _OUTPUT_OPTIONS.get(inv.program)
    if names is None:
        return False
    words = list(inv.words[1:])
    if inv.program == "cmake":
        texts = [w.text for w in words]
        if "-E" in texts and any(
            t in texts
            for t in (
                "rm",
                "remove",
                "remove_directory",
                "rename",
                "copy",
                "copy_directory",
                "create_symlink",
                "touch",
            )
        ):
            return any(
                computed_or_outside(w) for w in words[texts.index("-E") + 2 :] if not w.text.startswith("-")
            )
        return False
    if inv.program == "tar" and any(w.text in ("-P", "--absolute-names") for w in words):
        return True
    for i, word in enumerate(words):
        text = word.text
        value: Word | None = None
        if text in names and i + 1 < len(words):
            value = words[i + 1]
        elif text.startswith("--") and "=" in text and text.partition("=")[0] in names:
            value = Word(text.partition("=")[2], expansions=word.expansions)
        elif len(names) and any(text.startswith(n) and len(text) > len(n) and len(n) == 2 for n in names):
            value = Word(text[2:], expansions=word.expansions)  # `-o~/x`, `-C/`
        if value is not None and computed_or_outside(value):
            return True
    return False


def _carrier_code(inv: Invocation) -> bool:
    """`script -qc CODE`, `sg group CODE`: code handed over in a spelling unwrap does not read."""
    texts = list(inv.args)
    if inv.program == "script":
        return any(t.startswith("-") and not t.startswith("--") and "c" in t for t in texts) or any(
            t.startswith("--command") for t in texts
        )
    if inv.program == "sg":
        return len(texts) > 1
    return False


def _deletes_container_data(inv: Invocation) -> bool:
    """`docker system prune`, `docker volume rm`: databases and caches kept outside the project."""
    if inv.program not in ("docker", "podman", "nerdctl"):
        return False
    operands = [t for t in inv.args if not t.startswith("-")]
    return operands[:2] in (["system", "prune"], ["volume", "prune"], ["volume", "rm"]) or (
        operands[:2] == ["compose", "down"] and any(t in ("-v", "--volumes") for t in inv.args)
    )


def program_computed(inv: Invocation) -> bool:
    return not inv.words[0].literal


# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rule:
    description: str  # shown to the user: what the command would do
    matches: Callable[[Invocation], bool]


FAIL_CLOSED_RULES: tuple[Rule, ...] = (
    Rule(f"runs {_PROGRAM_EXPANSIONS}", program_computed),
    Rule("deletes paths the shell computes ($VAR, globs, ~, {a,b}, $(…))", _deletes_computed),
    Rule("deletes outside the working directory", _deletes_outside),
    Rule("deletes the workspace itself", _deletes_workspace),
    Rule("runs a risky program on input it reads (… | xargs rm)", _fed_risky),
    Rule("overwrites files with random data (shred)", _shreds),
    Rule("truncates files (truncate)", _truncates),
    Rule("writes raw data to a file (dd of=…)", _dd_writes),
    Rule("moves or overwrites paths outside the working directory or computed by the shell", _moves_unseen),
    Rule("chmod/chown outside the working directory or on computed paths", _ownership_unseen),
    Rule("find deletes, runs commands or writes files beyond what can be checked", _find_unseen),
    Rule("edits files in place outside the working directory (sed -i)", _in_place_unseen),
    Rule("writes files outside the working directory (tee)", _tee_unseen),
    Rule("defines a shell function or alias (what runs cannot be checked)", _defines_function),
    Rule('evaluates text the shell computes (eval "$X")', _eval_unseen),
    Rule("sources a script that cannot be checked (source $X, ~/…, <(…))", _sources_unseen),
    Rule("awk program runs commands or writes files (system(), |, >)", _awk_unseen),
    Rule("sed script runs commands or writes files (e, w)", _sed_unseen),
    Rule("tar runs a command (--to-command, -I, --checkpoint-action)", _tar_runs_code),
    Rule("an editor or debugger runs commands given on its command line", _editor_runs_commands),
    Rule("schedules or distributes commands (crontab, at, parallel)", _schedules_code),
    Rule("sqlite runs a shell command (.shell)", _sqlite_shells_out),
    Rule("a container gets the host's files or privileges (docker run -v /:…)", _container_mounts_host),
    Rule(
        "runs a command given in its options (ssh -o ProxyCommand, rsync -e, man -P, make --eval, …)",
        _runs_given_command,
    ),
    Rule("kills processes the shell computes (kill $PID, kill 0)", _kills_computed),
    Rule(
        "writes outside the working directory through an option (curl -o ~/…, tar -C ~, sort -o)",
        _writes_through_option,
    ),
    Rule("runs shell code handed over as text (script -c, sg)", _carrier_code),
    Rule("deletes container volumes or prunes everything (docker system prune)", _deletes_container_data),
)
