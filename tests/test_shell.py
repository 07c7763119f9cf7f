"""Reading shell commands: what a command line runs, apart from what it only says."""

from __future__ import annotations

import pytest

from core.shell import (
    ShellSyntaxError,
    SimpleCommand,
    Subshell,
    all_invocations,
    parse_command,
    parse_or_empty,
    reads_code_from_stdin,
    unwrap,
)


def commands(source: str) -> list[list[str]]:
    """The words of each simple command, in order, subshells flattened."""
    out: list[list[str]] = []

    def walk(script: list) -> None:
        for pipeline in script:
            for element in pipeline:
                if isinstance(element, Subshell):
                    walk(element.body)
                else:
                    out.append([w.text for w in element.words])

    walk(parse_command(source))
    return out


def only_command(source: str) -> SimpleCommand:
    [[command]] = parse_command(source)
    assert isinstance(command, SimpleCommand)
    return command


def test_operators_split_commands_and_pipes_stay_together() -> None:
    script = parse_command("make && make test || echo failed; ls | wc -l &\nexit")
    assert [len(pipeline) for pipeline in script] == [1, 1, 1, 2, 1]
    assert commands("a;b\nc") == [["a"], ["b"], ["c"]]
    assert commands("(cd src && make) | tee log") == [["cd", "src"], ["make"], ["tee", "log"]]


def test_quotes_are_removed_and_quoted_text_stays_an_argument() -> None:
    words = commands("""echo "rm -rf /" 'a b' c\\ d $'x\\ty'""")
    assert words == [["echo", "rm -rf /", "a b", "c d", "x\ty"]]
    assert only_command('echo "rm -rf /"').words[1].subs == []


def test_substitutions_are_commands_even_inside_double_quotes() -> None:
    command = only_command('echo "$(rm -rf /)" `whoami` <(curl x) $((1 + 2)) ${HOME}')
    assert [sub for word in command.words for sub in word.subs] == ["rm -rf /", "whoami", "curl x"]
    assert list(only_command("cat < $(pick) > `out`").substitutions()) == ["pick", "out"]


def test_redirections_are_not_arguments() -> None:
    command = only_command("make 2>&1 > build.log >> all.log < input")
    assert [w.text for w in command.words] == ["make"]
    assert [(r.op, r.target.text, r.writes) for r in command.redirects] == [
        (">&", "1", True),
        (">", "build.log", True),
        (">>", "all.log", True),
        ("<", "input", False),
    ]


def test_here_documents_keep_their_body_out_of_the_command_line() -> None:
    script = parse_command("cat <<'EOF' > notes.md\nrm -rf /\nEOF\nls")
    assert len(script) == 2
    heredoc = script[0][0]
    assert isinstance(heredoc, SimpleCommand)
    assert heredoc.redirects[0].body == "rm -rf /"
    assert commands("cat <<-X\n\tone\n\tX\nls") == [["cat"], ["ls"]]


def test_comments_and_line_continuations() -> None:
    assert commands("ls -la # rm -rf /\npwd") == [["ls", "-la"], ["pwd"]]
    assert commands("git \\\n  status") == [["git", "status"]]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("echo 'open", "unclosed single quote"),
        ('echo "open', "unclosed double quote"),
        ("echo $(ls", "unclosed parenthesis"),
        ("(cd src", "unclosed parenthesis"),
        ("echo `ls", "unclosed backtick"),
        ("echo ${HOME", "unclosed ${"),
        ("echo $'open", "unclosed $'…' quote"),
        ("cat >", "`>` without a target"),
    ],
)
def test_what_cannot_be_read_is_an_error(source: str, message: str) -> None:
    with pytest.raises(ShellSyntaxError, match=message.replace("$", r"\$").replace("{", r"\{")):
        parse_command(source)
    assert parse_or_empty(source) == []


def test_unwrap_finds_each_program_a_wrapper_runs() -> None:
    invocations, nested = unwrap(only_command("FOO=1 env X=2 nohup sudo -u me timeout 5 rm -rf x").words)
    assert [i.program for i in invocations] == ["env", "nohup", "sudo", "timeout", "rm"]
    assert invocations[-1].args == ("-rf", "x")
    assert nested == []
    assert unwrap(only_command("command -v rm").words)[0][-1].program == "command"


@pytest.mark.parametrize(
    ("source", "handed_over"),
    [
        ("bash -lc 'git push'", "git push"),
        ("eval rm -rf x", "rm -rf x"),
        ("su -c 'make install' root", "make install"),
        ("env -S 'rm -rf x'", "rm -rf x"),
        ("watch -n 1 make", "make"),
    ],
)
def test_unwrap_records_code_handed_to_another_interpreter(source: str, handed_over: str) -> None:
    assert unwrap(only_command(source).words)[1] == [handed_over]


def test_all_invocations_reaches_into_substitutions_and_find_exec() -> None:
    script = parse_command("echo $(sudo id) && find . -exec /bin/rm {} \\; | xargs -I{} curl {}")
    programs = {i.program for i in all_invocations(script)}
    assert programs == {"echo", "sudo", "id", "find", "rm", "xargs", "curl"}


@pytest.mark.parametrize(
    ("source", "reads_stdin"),
    [
        ("sh", True),
        ("bash -s -- arg", True),
        ("python3 -", True),
        ("bash script.sh", False),
        ("bash -c 'ls'", False),
        ("python -m json.tool", False),
        ("node --eval 1", False),
        ("grep x", False),
    ],
)
def test_reads_code_from_stdin(source: str, reads_stdin: bool) -> None:
    invocation = unwrap(only_command(source).words)[0][-1]
    assert reads_code_from_stdin(invocation) is reads_stdin
