"""What every command group shares: the error-mapping group class, lazy command loading,
consoles and JSON output.

This module is imported by ``lorelab.cli.main`` on every run, so it imports nothing heavier
than click at module level: rich, pydantic and the library are imported where they are used.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, NamedTuple, NoReturn

import click
from click.exceptions import NoArgsIsHelpError

from lorelab.cli._signals import interrupted_exit_code
from lorelab.errors import LorelabError

if TYPE_CHECKING:
    from pydantic import ValidationError
    from rich.console import Console


FULL_SENTENCE = 10_000
"""A short-help limit no summary reaches: the command list shows each first sentence whole."""


class OneLineUsageError(click.UsageError):
    """A usage error shown as one line (``lorelab: error: ...``) instead of click's three."""

    def show(self, file: IO[Any] | None = None) -> None:
        message = " ".join(self.format_message().split())
        hint = f" (see '{self.ctx.command_path} --help')" if self.ctx is not None else ""
        click.echo(f"lorelab: error: {message}{hint}", file=file, err=file is None)


def _one_line(exc: click.UsageError) -> click.UsageError:
    if isinstance(exc, OneLineUsageError | NoArgsIsHelpError):
        return exc  # already one line, or "no arguments: here is the help"
    return OneLineUsageError(exc.format_message(), exc.ctx)


def _closest(value: str, choices: Sequence[str]) -> str | None:
    """The one choice ``value`` most likely meant: the only one it begins, else the closest."""
    starting = [choice for choice in choices if choice.startswith(value)]
    if value and len(starting) == 1:
        return starting[0]
    import difflib  # only a mistyped value pays for it

    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None


class SuggestingChoice(click.Choice[Any]):
    """A choice whose error names the likely meant value: ``'claud' ... Did you mean 'claude'?``

    Every command a :class:`LorelabGroup` hands out has its choices made this kind, so every
    choice in the tree suggests, with no command declaring it."""

    def get_invalid_choice_message(self, value: Any, ctx: click.Context | None) -> str:
        message = super().get_invalid_choice_message(value, ctx)
        close = _closest(str(value), [str(choice) for choice in self.choices])
        return f"{message} Did you mean {close!r}?" if close is not None else message


def _suggesting(command: click.Command) -> click.Command:
    for param in command.params:
        if type(param.type) is click.Choice:
            param.type = SuggestingChoice(param.type.choices, param.type.case_sensitive)
    return command


def _listed(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def require_options(given: Mapping[str, object]) -> None:
    """A usage error naming every flag of ``given`` (flag -> value) that is ``None``, at once."""
    missing = [flag for flag, value in given.items() if value is None]
    if missing:
        plural = "s" if len(missing) > 1 else ""
        raise click.UsageError(f"Missing option{plural} {_listed(missing)}.")


def param_flags(params: Iterable[click.Parameter]) -> dict[str, str]:
    """How the user spells each parameter: ``--budget-tokens`` for an option, ``TASK`` for an
    argument, by parameter name."""
    spelled: dict[str, str] = {}
    for param in params:
        if param.name is None:
            continue
        if isinstance(param, click.Option):
            long = [opt for opt in param.opts if opt.startswith("--")] or param.opts
            spelled[param.name] = long[0].split("/")[0]
        else:
            spelled[param.name] = param.human_readable_name.upper()
    return spelled


def flag_namer(
    fields: dict[str, tuple[str, ...]], params: list[click.Parameter]
) -> Callable[[tuple[int | str, ...]], tuple[str, ...]]:
    """How an error's location (``("verification", "exit_code")``) is spelled on the command
    line: the flags of the longest dotted prefix the call declared, else the flag named like
    the field."""
    spelled = param_flags(params)

    def flag_of(location: tuple[int | str, ...]) -> tuple[str, ...]:
        words = [str(part) for part in location]
        for end in range(len(words), 0, -1):
            names = fields.get(".".join(words[:end]))
            if names:
                return tuple(spelled.get(name, name) for name in names)
        return (spelled[words[0]],) if words and words[0] in spelled else ()

    return flag_of


def flags_usage_error(
    exc: ValidationError, flag_of: Callable[[tuple[int | str, ...]], tuple[str, ...]]
) -> click.UsageError:
    """One usage error for every problem pydantic found in a request made from flags.

    Each problem names the user's flag (``flag_of`` maps a field's location to it) instead of
    the request's field: all the missing flags at once, then each bad value with what it was.
    A flag not given reaches the request as ``None``: its error is a missing flag too.
    """
    missing: list[str] = []
    invalid: list[str] = []
    for error in exc.errors():
        location = tuple(error["loc"])
        flags = flag_of(location) or (".".join(str(part) for part in location) or "(top level)",)
        value = error.get("input")
        if error["type"] == "missing" or value is None:
            missing.extend(flag for flag in flags if flag not in missing)
            continue
        flag = " ".join(flags)
        # The value is the user's own input: its control and bidi characters go escaped.
        shown = (
            f" {printable(repr(value))}"
            if isinstance(value, str)
            else (f" {value}" if isinstance(value, int | float) else "")
        )
        invalid.append(f"{flag}{shown}: {error['msg']}")
    parts = []
    if missing:
        plural = "s" if len(missing) > 1 else ""
        parts.append(f"Missing option{plural} {_listed(missing)}.")
    parts.extend(f"{problem}." for problem in invalid)
    return click.UsageError(" ".join(parts))


class LorelabGroup(click.Group):
    """A click group whose invocation maps :class:`LorelabError` to one line and an exit code.

    Because the mapping lives in ``invoke``, the installed ``lorelab`` program and click's
    ``CliRunner`` behave the same. Usage errors (an unknown option, a bad value) are one line
    too. Anything that is not a ``LorelabError`` keeps its traceback.
    """

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except NoArgsIsHelpError as exc:
            # A bare group is a question, not a mistake: its help on stdout, exit 0 (as gh).
            help_ctx = exc.ctx
            if help_ctx is None:
                raise
            click.echo(help_ctx.get_help())
            help_ctx.exit(0)
        except click.UsageError as exc:
            raise _one_line(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise _one_line(exc) from None
        except LorelabError as exc:
            # Error messages quote input (task ids, paths): its control characters go escaped.
            # Imported here: start-up (a hook, `memory prepare`) must not pay for lorelab.io.
            from lorelab.io import escape_control

            click.echo(f"lorelab: error: {escape_control(str(exc))}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt as exc:
            # Ctrl-C or SIGTERM: cleanup already ran on the way up; say so and use the
            # shell's convention (128 + signal), never an outcome's exit code.
            name, code = interrupted_exit_code(exc)
            click.echo(f"lorelab: interrupted by {name}", err=True)
            ctx.exit(code)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            import difflib  # only a mistyped command pays for it

            visible = [command for command in self.list_commands(ctx) if not self._hidden(command)]
            close = difflib.get_close_matches(name, visible, n=1, cutoff=0.6)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise OneLineUsageError(f"No such command {name!r}.{hint}", ctx)
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        return None if command is None else _suggesting(command)

    def _hidden(self, name: str) -> bool:
        """Whether the command ``name`` stays out of help and suggestions (an old spelling)."""
        return name in self.commands and self.commands[name].hidden

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # The whole first sentence of each command's help: the list wraps, it never cuts one.
        rows = [
            (name, command.get_short_help_str(FULL_SENTENCE))
            for name in self.list_commands(ctx)
            if (command := self.get_command(ctx, name)) is not None and not command.hidden
        ]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class LazyCommand(NamedTuple):
    """A subcommand imported on first use: ``"module:attribute"`` and its one-line help.

    The help is kept here so that listing the commands (``lorelab --help``) imports nothing;
    a test checks that it matches the command's own short help. ``hidden``: an old spelling
    kept working, listed nowhere (the command it names is hidden too).
    """

    target: str
    short_help: str
    hidden: bool = False


def deprecation(old: str, new: str) -> None:
    """Say on stderr that the old spelling ``old`` still works and ``new`` is the one to use."""
    click.echo(f"lorelab: warning: {old!r} is deprecated; use {new!r}", err=True)


def deprecated_alias(command: click.Command, old: str, new: str) -> click.Command:
    """A hidden copy of ``command`` for its old spelling ``old``: it works as before, after one
    deprecation line on stderr naming ``new``."""
    alias = hidden_alias(command)
    invoke = type(command).invoke

    def warn_then_invoke(ctx: click.Context) -> Any:
        deprecation(old, new)
        return invoke(alias, ctx)

    alias.invoke = warn_then_invoke  # type: ignore[method-assign]
    return alias


def hidden_alias(command: click.Command) -> click.Command:
    """A copy of ``command`` that works as before but is listed in no help: an old spelling.

    The copy shares the command's parameters and callback, so the two cannot drift apart."""
    alias = copy.copy(command)
    alias.hidden = True
    return alias


class DefaultRunGroup(LorelabGroup):
    """A group whose old spelling without a subcommand still runs ``run`` (or ``default``).

    ``lorelab eval learning --dataset ...`` and ``lorelab eval context FIXTURE...`` were the
    spellings before every evaluation group took explicit subcommands; they stay working,
    and are shown in no help. ``positional_run``: a first argument that is no subcommand's
    name is ``run``'s (``context``'s fixtures); otherwise only an option starts ``run``.
    ``warn``: the old spelling, even bare (``lorelab serve``), runs ``default`` after a
    deprecation line on stderr."""

    def __init__(
        self,
        *args: Any,
        positional_run: bool = False,
        default: str = "run",
        warn: bool = False,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("no_args_is_help", not warn)
        super().__init__(*args, **kwargs)
        self.positional_run = positional_run
        self.default = default
        self.warn = warn

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        first = args[0] if args else None
        if (
            (first is None and self.warn)
            or (
                first is not None
                and first not in self.commands
                and first not in ctx.help_option_names
                and (self.positional_run or first.startswith("-"))
            )
        ) and not ctx.resilient_parsing:
            if self.warn:
                deprecation(ctx.command_path, f"{ctx.command_path} {self.default}")
            args = [self.default, *args]
        return super().parse_args(ctx, args)


class LazyGroup(LorelabGroup):
    """A group that imports each subcommand's module only when that subcommand is used."""

    def __init__(
        self, *args: Any, lazy_commands: Mapping[str, LazyCommand] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands: dict[str, LazyCommand] = dict(lazy_commands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def _hidden(self, name: str) -> bool:
        entry = self.lazy_commands.get(name)
        return (entry is not None and entry.hidden) or super()._hidden(name)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands and cmd_name not in self.commands:
            self.add_command(load_lazy(self.lazy_commands[cmd_name]), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = FULL_SENTENCE
        rows = []
        for name in self.list_commands(ctx):
            if name in self.commands:
                command = self.commands[name]
                if command.hidden:
                    continue
                rows.append((name, command.get_short_help_str(limit)))
            elif not self.lazy_commands[name].hidden:
                rows.append((name, self.lazy_commands[name].short_help))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def load_lazy(entry: LazyCommand) -> click.Command:
    """Import and return the command ``entry`` names."""
    module_name, _, attribute = entry.target.partition(":")
    command = getattr(importlib.import_module(module_name), attribute)
    if not isinstance(command, click.Command):
        raise TypeError(f"{entry.target} is not a click command")
    return command


_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def printable(text: str) -> str:
    """``text`` with control characters (C0, C1, DEL) and bidi overrides shown as escapes."""
    return "".join(
        f"\\x{ord(ch):02x}"
        if ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F
        else (f"\\u{ord(ch):04x}" if ch in _BIDI else ch)
        for ch in text
    )


def stdout_console() -> Console:
    """A rich console on stdout (plain text when stdout is not a terminal)."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def stderr_console() -> Console:
    """A rich console on stderr, for progress and status."""
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def echo_json(obj: Any) -> None:
    """Print a JSON value or pydantic model as indented JSON on stdout."""
    from lorelab.io import pretty_json

    click.echo(pretty_json(obj), nl=False)


def exit_with(code: int) -> NoReturn:
    """End the command with ``code`` after its output was printed."""
    raise click.exceptions.Exit(code)
