"""Stored text is printed safely: control characters escaped for people, exact in JSON."""

import json

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.io import escape_control

HOSTILE = "Fix login \x1b[2J\x1b]0;pwned\x07 tab\there \u202eevil\u202c \x9b31m done\x00"
RAW = ["\x1b", "\x07", "\u202e", "\u202c", "\x9b", "\x00"]


def _record(home: str) -> None:
    result = CliRunner().invoke(
        app,
        [
            "memory", "--home", home, "record", "--task", HOSTILE, "--summary", HOSTILE,
            "--outcome", "passed", "--verify-command", f"pytest -q {HOSTILE}",
            "--verify-exit-code", "0", "--ran", f"1:make {HOSTILE}",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("command", [["list"], ["show", "exp-1"], ["list", "--kind", "brief"]])
def test_list_and_show_escape_control_and_bidi_characters(tmp_path, command):
    home = str(tmp_path / "home")
    _record(home)
    CliRunner().invoke(app, ["memory", "--home", home, "prepare", HOSTILE])
    result = CliRunner().invoke(app, ["memory", "--home", home, *command])
    assert result.exit_code == 0, result.output
    for character in RAW:
        assert character not in result.output, repr(character)
    assert "\\x1b" in result.output
    assert "\\u202e" in result.output or command == ["list", "--kind", "brief"]


def test_json_output_keeps_the_stored_text_exact(tmp_path):
    home = str(tmp_path / "home")
    _record(home)
    shown = CliRunner().invoke(app, ["memory", "--home", home, "show", "exp-1", "--json"])
    assert json.loads(shown.output)["task"] == HOSTILE
    listed = CliRunner().invoke(app, ["memory", "--home", home, "list", "--json"])
    assert json.loads(listed.output)["items"][0]["summary"] == HOSTILE


def test_escape_control_keeps_text_and_layout_and_escapes_the_rest():
    assert escape_control("plain text, tabs\tand\nnewlines") == "plain text, tabs\tand\nnewlines"
    assert escape_control("a\x1b[31mb\x07") == "a\\x1b[31mb\\x07"
    assert escape_control("\u202eabc\u2066\u2069\x7f\x85\r") == (
        "\\u202eabc\\u2066\\u2069\\x7f\\x85\\x0d"
    )
    assert escape_control("ünïcödé ✓ 日本") == "ünïcödé ✓ 日本"
