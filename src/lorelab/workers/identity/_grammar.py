"""Which argv operand is the program, for launchers other than Python and Node.

Shells (``sh``, ``bash``, ``zsh``, ``dash``, ``ksh``...), ``ruby``, ``perl``, ``php``, ``lua``,
``Rscript``, ``tclsh``, ``deno`` and ``bun`` are recognised by name. :func:`plan_arguments` reads
their options as the interpreter would and says which operand is the script, which text is
inline source (``sh -c``, ``ruby -e``, ``deno eval``...) and where the program's own arguments
begin. It touches no file: the identity binder screens and binds what the plan names.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from lorelab.errors import PreflightError, UsageError


@dataclass(frozen=True, slots=True)
class Inline:
    """Program text given in the argv: the flag that carries it and where it is."""

    flag: str
    index: int
    text: str
    shell: bool = False


@dataclass(frozen=True, slots=True)
class Plan:
    """What the argv of a recognised interpreter runs."""

    family: str
    inline: tuple[Inline, ...] = ()
    script: str | None = None
    script_index: int | None = None
    script_on_path: bool = False
    script_optional: bool = False
    program_start: int = 1
    notes: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class _Grammar:
    """The options of one interpreter family (single-dash letters may be combined)."""

    inline: frozenset[str] = frozenset()
    value: frozenset[str] = frozenset()
    attached: frozenset[str] = frozenset()
    digits: frozenset[str] = frozenset()
    script: frozenset[str] = frozenset()
    chdir: frozenset[str] = frozenset()
    path_search: frozenset[str] = frozenset()
    combine: bool = True


_VERSION: Final = r"(?:-?\d+(?:\.\d+)*)?"
_FAMILIES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("shell", re.compile(rf"(?:ba|z|da|k|mk|a|y|pdk|c|tc)?sh{_VERSION}")),
    ("ruby", re.compile(rf"(?:j|truffle)?ruby{_VERSION}")),
    ("perl", re.compile(rf"perl{_VERSION}")),
    ("php", re.compile(rf"php{_VERSION}(?:-cli)?")),
    ("lua", re.compile(rf"lua(?:jit)?{_VERSION}")),
    ("rscript", re.compile(r"Rscript")),
    ("tcl", re.compile(rf"(?:tclsh|wish){_VERSION}")),
    ("deno", re.compile(r"deno")),
    ("bun", re.compile(r"bunx?")),
)

_GRAMMARS: Final[dict[str, _Grammar]] = {
    "ruby": _Grammar(
        inline=frozenset({"-e"}),
        value=frozenset(
            {
                "-I",
                "-r",
                "-E",
                "--encoding",
                "--external-encoding",
                "--internal-encoding",
                "--enable",
                "--disable",
            }
        ),
        attached=frozenset({"-x", "-W", "-T", "-K", "-F", "-i"}),
        digits=frozenset({"-0"}),
        chdir=frozenset({"-C"}),
        path_search=frozenset({"-S"}),
    ),
    "perl": _Grammar(
        inline=frozenset({"-e", "-E"}),
        value=frozenset({"-I"}),
        attached=frozenset({"-M", "-m", "-d", "-D", "-i", "-x", "-V", "-F"}),
        digits=frozenset({"-l", "-0", "-C"}),
        path_search=frozenset({"-S"}),
    ),
    "php": _Grammar(
        inline=frozenset(
            {
                "-r",
                "-B",
                "-R",
                "-E",
                "--run",
                "--process-begin",
                "--process-code",
                "--process-end",
            }
        ),
        value=frozenset(
            {"-c", "-d", "-z", "-t", "-S", "--php-ini", "--define", "--zend-extension"}
        ),
        script=frozenset({"-f", "-F", "--file", "--process-file"}),
        combine=False,
    ),
    "lua": _Grammar(
        inline=frozenset({"-e"}),
        value=frozenset({"-l", "-j"}),
        attached=frozenset({"-O"}),
    ),
    "rscript": _Grammar(inline=frozenset({"-e"}), combine=False),
    "tcl": _Grammar(value=frozenset({"-encoding"}), combine=False),
}

_SHELL_VALUE_LETTERS: Final = frozenset("oO")
_SHELL_LONG_VALUE: Final = frozenset({"--rcfile", "--init-file"})

_DENO_SCRIPT_COMMANDS: Final = frozenset({"run", "serve"})
_DENO_COMMANDS: Final = frozenset(
    {
        "add",
        "bench",
        "bundle",
        "check",
        "clean",
        "compile",
        "completions",
        "coverage",
        "doc",
        "fmt",
        "help",
        "info",
        "init",
        "install",
        "jupyter",
        "lint",
        "lsp",
        "outdated",
        "publish",
        "remove",
        "repl",
        "task",
        "test",
        "types",
        "uninstall",
        "update",
        "upgrade",
        "vendor",
    }
)
_DENO_VALUE: Final = frozenset(
    {
        "-c",
        "--config",
        "--import-map",
        "--lock",
        "--cert",
        "--location",
        "--seed",
        "-L",
        "--log-level",
        "--preload",
        "--ext",
    }
)
_BUN_COMMANDS: Final = frozenset(
    {
        "a",
        "add",
        "audit",
        "build",
        "c",
        "create",
        "exec",
        "i",
        "info",
        "init",
        "install",
        "link",
        "outdated",
        "patch",
        "pm",
        "publish",
        "remove",
        "repl",
        "rm",
        "test",
        "unlink",
        "update",
        "upgrade",
        "why",
        "x",
    }
)
_BUN_VALUE: Final = frozenset(
    {
        "-r",
        "--preload",
        "-c",
        "--config",
        "--env-file",
        "--tsconfig-override",
        "-d",
        "--define",
        "-l",
        "--loader",
        "--main-fields",
        "--conditions",
        "--port",
        "--filter",
        "-F",
    }
)
_BUN_INLINE: Final = frozenset({"-e", "--eval", "-p", "--print"})
_SCRIPT_SUFFIXES: Final = (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx")
_REMOTE: Final = re.compile(r"(?:https?|npm|jsr|data|file|node):", re.IGNORECASE)
_ASSIGNMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_CONTROL: Final = frozenset({";", "&", "&&", "|", "||", "|&", ";;", "(", ")", "!", "{", "}"})
# Words after which the shell expects a command again.
_PREFIXES: Final = frozenset(
    {"if", "then", "else", "elif", "do", "while", "until", "time", "exec", "command", "nohup"}
)


def interpreter_family(names: Sequence[str]) -> str | None:
    """The recognised family of a launcher known by any of ``names``, or ``None``."""
    for family, pattern in _FAMILIES:
        if any(pattern.fullmatch(name) for name in names):
            return family
    return None


def _stdin_refusal(label: str, how: str) -> PreflightError:
    return PreflightError(
        f"{label} {how} reads its program from stdin, where lorelab writes the payload"
    )


def option_at(argv: Sequence[str], index: int, label: str) -> str | None:
    """``argv[index]`` while it is one of the interpreter's options; ``None`` where the options
    end (the argv's end, ``--`` or the first operand). ``-`` (the program read from stdin, where
    lorelab writes the payload) is refused."""
    arg = argv[index] if index < len(argv) else "--"
    if arg == "-":
        raise _stdin_refusal(label, "'-'")
    return arg if arg.startswith("-") and arg != "--" else None


def operands_at(argv: Sequence[str], index: int) -> int:
    """Where the operands begin once the options end at ``index`` (past a ``--``)."""
    return index + 1 if index < len(argv) and argv[index] == "--" else index


def program_at(argv: Sequence[str], index: int, label: str, names: str) -> int:
    """The index of the operand naming the program, once the options end at ``index``; refused
    when there is none (the interpreter would read its program from stdin)."""
    index = operands_at(argv, index)
    if index >= len(argv):
        raise PreflightError(
            f"the {label} launcher names no {names}; it would read its program from stdin, "
            "where lorelab writes the payload"
        )
    return index


def _missing_value(label: str, flag: str) -> UsageError:
    return UsageError(f"worker argv: {label} {flag} needs an argument")


def plan_arguments(family: str, argv: Sequence[str]) -> Plan:
    """Read ``argv`` (``argv[0]`` is the launcher) as an interpreter of ``family`` would."""
    label = argv[0].rsplit("/", 1)[-1]
    if family == "shell":
        return _plan_shell(label, argv)
    if family == "deno":
        return _plan_deno(label, argv)
    if family == "bun":
        return _plan_bun(label, argv)
    return _plan_grammar(family, label, argv, _GRAMMARS[family])


def _plan_shell(label: str, argv: Sequence[str]) -> Plan:
    """POSIX shells: ``-c`` reads commands from the first operand; else it is the script."""
    index = 1
    command = from_stdin = False
    while index < len(argv):
        arg = argv[index]
        if arg in ("--", "-"):
            index += 1
            break
        if arg.startswith("--"):
            name, has_value, _ = arg.partition("=")
            index += 2 if name in _SHELL_LONG_VALUE and not has_value else 1
            continue
        if len(arg) > 1 and arg[0] in "-+":
            consumed = 1
            for letter in arg[1:]:
                if letter in _SHELL_VALUE_LETTERS:
                    consumed += 1
                elif arg[0] == "-" and letter == "c":
                    command = True
                elif arg[0] == "-" and letter == "s":
                    from_stdin = True
            if index + consumed > len(argv):
                raise _missing_value(label, arg)
            index += consumed
            continue
        break
    if command:
        if index >= len(argv):
            raise _missing_value(label, "-c")
        return Plan(
            "shell",
            inline=(Inline("-c", index, argv[index], shell=True),),
            program_start=index + 1,
        )
    if from_stdin:
        raise _stdin_refusal(label, "-s")
    if index >= len(argv):
        raise PreflightError(
            f"the {label} launcher names no script or -c command; it would read its commands "
            "from stdin, where lorelab writes the payload"
        )
    return Plan("shell", script=argv[index], script_index=index, program_start=index + 1)


def _plan_grammar(family: str, label: str, argv: Sequence[str], grammar: _Grammar) -> Plan:
    """Interpreters whose first non-option operand is the script (ruby, perl, php, lua...)."""
    index = 1
    inline: list[Inline] = []
    script: tuple[str, int] | None = None
    on_path = False

    def take(flag: str, rest: str, at: int) -> tuple[str, int, int]:
        """The flag's value, the argv index holding it, and how many arguments were used."""
        if rest:
            return rest, at, 1
        if at + 1 < len(argv):
            return argv[at + 1], at + 1, 2
        raise _missing_value(label, flag)

    while (arg := option_at(argv, index, label)) is not None:
        name, has_value, attached = arg.partition("=")
        if arg.startswith("--") or name in grammar.value | grammar.inline | grammar.script:
            # A whole-word option (--run, -encoding), with its value attached by '=' or next.
            if name in grammar.chdir:
                raise _chdir_refusal(label, name)
            used = 1
            if name in grammar.value | grammar.inline | grammar.script:
                if has_value:
                    value, at = attached, index
                else:
                    value, at, used = take(name, "", index)
                if name in grammar.inline:
                    inline.append(Inline(name, at, value))
                elif name in grammar.script:
                    script = (value, at)
            index += used
            continue
        position, used = 1, 1
        while position < len(arg):
            flag = "-" + arg[position]
            rest = arg[position + 1 :]
            if flag in grammar.chdir:
                raise _chdir_refusal(label, flag)
            if flag in grammar.inline | grammar.value | grammar.script:
                value, at, used = take(flag, rest, index)
                if flag in grammar.inline:
                    inline.append(Inline(flag, at, value))
                elif flag in grammar.script:
                    script = (value, at)
                break
            if flag in grammar.attached or not grammar.combine:
                break
            if flag in grammar.path_search:
                on_path = True
            if flag in grammar.digits:
                position += 1
                while position < len(arg) and (arg[position].isdigit() or arg[position] in "xX"):
                    position += 1
                continue
            position += 1
        index += used
    return _assemble(family, label, argv, operands_at(argv, index), inline, script, on_path)


def _assemble(
    family: str,
    label: str,
    argv: Sequence[str],
    index: int,
    inline: list[Inline],
    script: tuple[str, int] | None,
    on_path: bool,
) -> Plan:
    """The plan once the options are read: ``index`` is the first operand."""
    if script is not None:
        return Plan(
            family,
            inline=tuple(inline),
            script=script[0],
            script_index=script[1],
            program_start=index,
        )
    if inline:
        return Plan(family, inline=tuple(inline), program_start=index)
    if index >= len(argv):
        raise PreflightError(
            f"the {label} launcher names no script or inline program; it would read its program "
            "from stdin, where lorelab writes the payload"
        )
    return Plan(
        family,
        script=argv[index],
        script_index=index,
        script_on_path=on_path,
        program_start=index + 1,
    )


def _chdir_refusal(label: str, flag: str) -> PreflightError:
    return PreflightError(
        f"{label} {flag} changes directory before loading its script, so the script cannot be "
        "bound against the trial cwd; run the worker from that directory instead"
    )


def _skip_options(
    label: str, argv: Sequence[str], index: int, value: frozenset[str], inline: frozenset[str]
) -> tuple[int, list[Inline]]:
    """Skip the options of a JS runtime from ``index``; return where operands start."""
    found: list[Inline] = []
    while index < len(argv):
        arg = argv[index]
        if arg == "--":
            return index + 1, found
        if not arg.startswith("-") or arg == "-":
            break
        if arg == "--cwd" or arg.startswith("--cwd="):
            raise _chdir_refusal(label, "--cwd")
        name, has_value, attached = arg.partition("=")
        if name in inline:
            if has_value:
                found.append(Inline(name, index, attached))
                index += 1
            elif index + 1 < len(argv):
                found.append(Inline(name, index + 1, argv[index + 1]))
                index += 2
            else:
                raise _missing_value(label, name)
            continue
        index += 2 if name in value and not has_value else 1
    if index > len(argv):
        raise _missing_value(label, argv[-1])
    return index, found


def _plan_deno(label: str, argv: Sequence[str]) -> Plan:
    """``deno run|serve [OPTIONS] SCRIPT``, ``deno eval CODE``, ``deno SCRIPT``; other commands."""
    index, _ = _skip_options(label, argv, 1, _DENO_VALUE, frozenset())
    if index >= len(argv):
        raise _stdin_refusal(label, "without a script (the REPL)")
    command = argv[index]
    if command == "eval":
        start, _ = _skip_options(label, argv, index + 1, _DENO_VALUE, frozenset())
        if start >= len(argv):
            raise _missing_value(label, "eval")
        return Plan("deno", inline=(Inline("eval", start, argv[start]),), program_start=start + 1)
    if command in _DENO_COMMANDS:
        return Plan("deno", program_start=index + 1)
    if command in _DENO_SCRIPT_COMMANDS:
        index, _ = _skip_options(label, argv, index + 1, _DENO_VALUE, frozenset())
        if index >= len(argv):
            raise PreflightError(f"{label} {command} names no script")
    script = argv[index]
    _refuse_remote(label, script)
    return Plan("deno", script=script, script_index=index, program_start=index + 1)


def _plan_bun(label: str, argv: Sequence[str]) -> Plan:
    """``bun [run] FILE``, ``bun -e CODE``; a package.json script name is not a file."""
    index, inline = _skip_options(label, argv, 1, _BUN_VALUE, _BUN_INLINE)
    if inline:
        return Plan("bun", inline=tuple(inline), program_start=index)
    if index >= len(argv):
        return Plan("bun", program_start=index)
    command = argv[index]
    if command in _BUN_COMMANDS:
        return Plan("bun", program_start=index + 1)
    if command == "run":
        index, inline = _skip_options(label, argv, index + 1, _BUN_VALUE, _BUN_INLINE)
        if inline:
            return Plan("bun", inline=tuple(inline), program_start=index)
        if index >= len(argv):
            raise PreflightError(f"{label} run names no script")
    script = argv[index]
    _refuse_remote(label, script)
    # `bun dev` runs the package.json script "dev": only a path-like operand must be a file.
    path_like = "/" in script or script.endswith(_SCRIPT_SUFFIXES)
    return Plan(
        "bun",
        script=script,
        script_index=index,
        script_optional=not path_like,
        program_start=index + 1,
    )


def _refuse_remote(label: str, script: str) -> None:
    if _REMOTE.match(script):
        raise PreflightError(
            f"{label} script {script!r} is not a local file; lorelab binds only local files, "
            "so a worker must run a script it can hash"
        )


def shell_words(text: str) -> list[tuple[str, bool]]:
    """The words of shell command text, each with whether it stands where a command does.

    The text is split as the shell would (quotes, and the operators ``; & | ( )``) but not
    interpreted: variables, globs and substitutions stay as written. Text that does not split
    (an unbalanced quote) is split at whitespace.
    """
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        words = text.split()
    result: list[tuple[str, bool]] = []
    command_next = True
    for word in words:
        if word in _CONTROL or (command_next and word in _PREFIXES):
            command_next = True
            continue
        if set(word) <= set("<>&|;()"):
            command_next = False
            continue
        if command_next and _ASSIGNMENT.match(word):
            result.append((word, False))
            continue
        result.append((word, command_next))
        command_next = False
    return result
