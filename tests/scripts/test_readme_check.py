"""scripts/readme_check.py: which README blocks run, what exit code each command must give,
and a real run of a small block."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("readme_check", ROOT / "scripts/readme_check.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["readme_check"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


readme_check = _load()

README = """# demo

```bash
echo one
```

<!-- template: needs an agent CLI -->
```bash
claude mcp add lorelab -- lorelab mcp
```

<!-- not-run: the whole suite -->

```bash
pytest
```

```toml
[mcp_servers.lorelab]
```

```
python benchmarks/retrieval_quality.py
```

```sh
# a comment line is no command
lorelab eval context run examples/*.json --output out/context   # exit 1: two FAIL
lorelab eval context import --from codex \\
    session.jsonl --output out/s.json   # exit 3
```
"""


def test_only_shell_fences_are_blocks_and_markers_say_how_each_is_treated():
    blocks = readme_check.extract(README)
    assert [(b.line, b.kind, b.why) for b in blocks] == [
        (3, "run", None),
        (8, "template", "needs an agent CLI"),
        (14, "not-run", "the whole suite"),
        (26, "run", None),
    ]


def test_exit_codes_come_from_a_trailing_exit_comment_and_default_to_zero():
    last = readme_check.extract(README)[-1]
    assert [c.expected for c in last.commands] == [1, 3]
    assert last.commands[1].text.splitlines()[0].endswith("\\")  # the continuation is kept
    assert [c.expected for c in readme_check.extract(README)[0].commands] == [0]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("```bash\nfalse   # Exit one\n```\n", "write the exit code as '# exit N'"),
        ("<!-- not-run -->\n```bash\ntrue\n```\n", "needs a reason"),
        ("<!-- template; agent -->\n```bash\ntrue\n```\n", "malformed marker"),
        ("```bash\ntrue \\\n```\n", "inside a continued line"),
        ("```bash\ntrue\n", "never closed"),
    ],
)
def test_a_malformed_annotation_is_refused_naming_its_line(text, problem):
    with pytest.raises(readme_check.ReadmeError, match=problem):
        readme_check.extract(text)


def _block(body: str):
    [block] = readme_check.extract(f"```bash\n{body}\n```\n")
    return block


def test_a_block_passes_when_each_command_gives_the_stated_code(tmp_path):
    root = tmp_path / "clone"
    root.mkdir()
    block = _block("false   # exit 1\nmkdir out && touch out/made")
    passed, codes, _seconds = readme_check.run_block(block, root, {"PATH": "/usr/bin:/bin"})
    assert passed
    assert codes == [1, 0]
    assert (root / "out/made").is_file()


def test_a_block_stops_at_the_first_command_with_another_code(tmp_path):
    root = tmp_path / "clone"
    root.mkdir()
    block = _block("true   # exit 2\ntouch never")
    passed, codes, _seconds = readme_check.run_block(block, root, {"PATH": "/usr/bin:/bin"})
    assert not passed
    assert codes == [0]
    assert not (root / "never").exists()


def test_the_readme_runs_its_main_job_and_marks_its_templates_plainly():
    blocks = readme_check.extract((ROOT / "README.md").read_text(encoding="utf-8"))
    run = [b for b in blocks if b.kind == "run"]
    assert "eval learning run --dataset default --agent fixture" in run[0].commands[0].text
    assert any("--jobs 2" in c.text for b in run for c in b.commands)
    for block in blocks:
        if block.kind == "template":
            # A reader sees the block, not the HTML comment: its first line says so too.
            lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
            assert lines[block.line].startswith("# Template"), block.line
