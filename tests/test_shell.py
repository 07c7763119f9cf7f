"""Reading shell commands: what a command line runs, apart from what it only says."""

from __future__ import annotations

import pytest

from hermes_core.shell.parse import SimpleCommand, Subshell, parse_command, parse_or_empty, simple_commands
from hermes_core.shell.programs import all_invocations, reads_code_from_stdin, unwrap, unwrapped
from hermes_core.shell.tokens import ShellSyntaxError


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


@pytest.mark.parametrize(
    ("word", "expansions"),
    [
        ("plain", set()),
        ("'quoted *'", set()),
        ('"a b"', set()),
        ("\\*", set()),
        ("r\\m", set()),
        ("$HOME", {"parameter"}),
        ('"${HOME:?}"', {"parameter"}),
        ("$(pwd)", {"command"}),
        ("`pwd`", {"command"}),
        ("$((1+2))", {"arithmetic"}),
        ("$'\\x72m'", {"ansi-c"}),
        ("*.py", {"glob"}),
        ("file?.txt", {"glob"}),
        ("[ab].txt", {"glob"}),
        ("{a,b}", {"brace"}),
        ("{1..3}", {"brace"}),
        ("~", {"tilde"}),
        ("~root/x", {"tilde"}),
        ("--prefix=~/x", {"tilde"}),
        ("'~'", set()),
        ("{}", set()),
        ("HEAD@{1}", set()),
        ("$", set()),
        ("${x@P}", {"parameter", "prompt"}),
    ],
)
def test_words_know_what_the_shell_will_expand(word: str, expansions: set[str]) -> None:
    assert only_command(f"echo {word}").words[1].expansions == expansions


def test_ansi_c_escapes_are_decoded() -> None:
    assert only_command("$'\\x72m' $'\\162' $'\\u00e9'").words[0].text == "rm"
    assert [w.text for w in only_command("$'\\x72m' $'\\162' $'\\u00e9'").words] == ["rm", "r", "é"]


def test_substitutions_inside_parameter_arithmetic_and_here_documents_are_found() -> None:
    assert only_command("echo ${x:-$(rm -rf /)}").words[1].subs == ["rm -rf /"]
    assert only_command("echo $(( $(id -u) + 1 ))").words[1].subs == ["id -u"]
    heredoc = parse_command("cat <<EOF\nhello $(whoami) `id`\nEOF")[0][0]
    assert isinstance(heredoc, SimpleCommand)
    assert list(heredoc.substitutions()) == ["whoami", "id"]
    quoted = parse_command("cat <<'EOF'\nhello $(whoami)\nEOF")[0][0]
    assert isinstance(quoted, SimpleCommand) and list(quoted.substitutions()) == []
    # quotes mean nothing in a here-document body: an apostrophe does not open one
    assert parse_command("cat <<EOF > notes.md\nDon't panic\nEOF")


def test_function_definitions_read_as_the_command_function() -> None:
    assert commands("f(){ f|f& }; f")[0] == ["function", "f"]
    assert commands("ls() { rm -rf x; }")[0] == ["function", "ls"]


def test_array_assignments_keep_their_values_out_of_the_command() -> None:
    command = only_command("a=(one $(two) *.py)")
    assert [w.text for w in command.words] == ["a="]
    assert command.words[0].subs == ["two"]
    assert command.words[0].expansions == {"command", "glob"}


def test_nesting_past_the_limit_is_too_deep_not_a_crash() -> None:
    from hermes_core.shell.tokens import ShellTooDeep

    for source in (
        "(" * 5000 + "ls" + ")" * 5000,
        "${x:-" * 200 + "y" + "}" * 200,
        '"$(' * 3000 + ')"' * 3000,
    ):
        with pytest.raises(ShellTooDeep):
            parse_command(source)


def test_xargs_marks_what_it_runs_as_fed_by_input() -> None:
    invocations, _ = unwrap(only_command("xargs -0 nice rm -f").words)
    assert [(i.program, i.fed) for i in invocations] == [("xargs", False), ("nice", True), ("rm", True)]


def test_package_runners_and_git_hand_over_what_they_run() -> None:
    assert [i.program for i in unwrap(only_command("npx --yes rimraf dist").words)[0]] == ["npx", "rimraf"]
    assert [i.program for i in unwrap(only_command("npm exec -- rimraf dist").words)[0]] == ["npm", "rimraf"]
    assert unwrap(only_command("git submodule foreach 'git pull'").words)[1] == ["git pull"]
    assert unwrap(only_command("git rebase -x 'make test' main").words)[1] == ["make test"]
    assert unwrap(only_command("ssh -p 22 host ls -la").words)[1] == ["ls -la"]


def test_simple_commands_reach_into_subshells_in_order() -> None:
    script = parse_command("a; (b && (c | d)); e")
    assert [c.words[0].text for c in simple_commands(script)] == ["a", "b", "c", "d", "e"]


def test_a_command_is_unwrapped_once_however_often_the_rules_ask() -> None:
    command = only_command("sudo env X=1 rm -rf /tmp/x")
    first = unwrapped(command)
    assert [i.program for i in first[0]] == ["sudo", "env", "rm"]
    assert unwrapped(command) is first  # the rules ask several times per command
