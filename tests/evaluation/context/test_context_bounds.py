"""Input bounds of ``eval context scan`` and ``import`` (issue 31, items 14 and 15): a line
nested too deep is refused like any bad line, and a symbolic link out of a scanned directory
is listed as refused, never opened."""

import json
import os
from pathlib import Path

from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.evaluation.context import scan_sessions
from tests.support.sessions import Claude, Codex

DEEP = 5_000  # well past Python's recursion limit (1,000)


def cli(*args: object):
    return CliRunner().invoke(app, ["eval", "context", *map(str, args)])


def _deep_session(path: Path) -> Path:
    good = Claude(session_id="deep").user("go").write(path)
    deep = '{"type":"user","message":{"content":' + "[" * DEEP + "]" * DEEP + "}}\n"
    path.write_text(good.read_text() + deep)
    return path


def test_a_line_nested_thousands_deep_is_refused_by_scan_like_any_bad_line(tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    deep = _deep_session(folder / "deep.jsonl")
    Claude(session_id="fine").user("go").say("done").write(folder / "fine.jsonl")
    result = cli("scan", folder, "--output", tmp_path / "out")
    assert result.exit_code == 1, result.output
    assert "RecursionError" not in result.output
    data = json.loads((tmp_path / "out" / "context-scan.json").read_text())
    assert [s["sessionId"] for s in data["sessions"]] == ["fine"]
    (refused,) = data["refused"]
    assert refused["path"] == str(deep)
    assert "line 2" in refused["reason"]
    assert "nested" in refused["reason"]


def test_a_line_nested_thousands_deep_is_refused_by_import_in_one_line(tmp_path):
    deep = _deep_session(tmp_path / "deep.jsonl")
    out = tmp_path / "fixture.json"
    result = cli("import", "--from", "claude-code", deep, "--output", out)
    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert "line 2" in line
    assert "nested" in line
    assert not out.exists()


def test_a_codex_tool_call_whose_arguments_string_is_nested_thousands_deep_is_no_command(
    tmp_path,
):
    session = Codex().turn().shell("make test", exit_code=2)
    session.line(
        "response_item",
        {
            "type": "function_call",
            "name": "shell",
            "arguments": "[" * DEEP + "]" * DEEP,
            "call_id": "call_deep",
        },
    )
    session.line(
        "response_item",
        {"type": "function_call_output", "call_id": "call_deep", "output": "{" * DEEP},
    )
    path = session.write(tmp_path / "rollout.jsonl")
    result = scan_sessions([str(path)])
    assert result.receipt.refused == []
    (row,) = result.receipt.sessions
    assert row.commands == 1  # the deep call is not a command; nothing crashed


def test_a_file_symlink_out_of_the_scanned_directory_is_refused_and_never_opened(tmp_path):
    folder = tmp_path / "sessions"
    (folder / "sub").mkdir(parents=True)
    outside = Claude(session_id="outside").user("secret work").write(tmp_path / "outside.jsonl")
    Claude(session_id="inside").user("go").write(folder / "inside.jsonl")
    os.symlink(outside, folder / "sub" / "escape.jsonl")
    os.symlink("/etc/passwd", folder / "passwd.jsonl")
    os.symlink("/proc/self/environ", folder / "environ.jsonl")
    real = Claude(session_id="linked").user("go").write(folder / "sub" / "real.data")
    os.symlink(real, folder / "alias.jsonl")  # a link that stays inside the tree is read
    before = outside.stat().st_atime_ns
    result = scan_sessions([str(folder)])
    assert sorted(s.session_id or "" for s in result.receipt.sessions) == ["inside", "linked"]
    refused = {Path(r.path).name: r for r in result.receipt.refused}
    assert sorted(refused) == ["environ.jsonl", "escape.jsonl", "passwd.jsonl"]
    for item in refused.values():
        assert "symbolic link" in item.reason
        assert "outside" in item.reason
        assert item.sha256 is None  # not read
    assert outside.stat().st_atime_ns == before
    assert result.exit_code == 1


def test_a_symlink_named_on_the_command_line_is_read_as_given(tmp_path):
    outside = Claude(session_id="outside").user("go").write(tmp_path / "outside.jsonl")
    link = tmp_path / "link.jsonl"
    os.symlink(outside, link)
    result = scan_sessions([str(link)])
    assert [s.session_id for s in result.receipt.sessions] == ["outside"]
