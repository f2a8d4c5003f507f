import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from lorelab.errors import PathError
from lorelab.workspace import MAX_PATH_DEPTH, FileEntry, canonical_path, check_distinct


@pytest.mark.parametrize("path", ["src/a.py", "tests/test_a.py", "a", "x/y_z-1.js"])
def test_canonical_paths_are_accepted(path):
    assert canonical_path(path) == path


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("", "empty"),
        ("/etc/passwd", "absolute"),
        ("../escape.py", r"'\.\.'"),
        ("a/../b.py", r"'\.\.'"),
        ("a/./b.py", r"'\.'"),
        ("a//b.py", "empty"),
        ("a/", "empty"),
        ("a\\b.py", "backslash"),
        ("a\x00b", "NUL"),
        (".hidden", "not start with"),
        ("-rf", "not start with"),
        ("a b.py", "must use"),
        ("/".join(["d"] * (MAX_PATH_DEPTH + 1)), "deeper"),
        ("a" * 241, "longer"),
    ],
)
def test_non_canonical_paths_are_refused_naming_the_path(path, problem):
    with pytest.raises(PathError, match=problem):
        canonical_path(path)


def test_paths_differing_only_by_case_collide():
    with pytest.raises(PathError, match="collide"):
        check_distinct(["src/A.py", "src/b.py", "src/a.py"])


def test_distinct_paths_pass():
    check_distinct(["src/a.py", "src/b.py"])


def test_file_entry_validates_its_path():
    assert FileEntry(path="src/a.py", content="x = 1\n").path == "src/a.py"
    with pytest.raises(ValidationError, match="absolute"):
        FileEntry(path="/tmp/x.py", content="")


@given(st.lists(st.from_regex(r"[a-z0-9_]{1,8}", fullmatch=True), min_size=1, max_size=8))
def test_joined_simple_segments_are_canonical(segments):
    path = "/".join(segments)
    assert canonical_path(path) == path


@given(st.text(max_size=30))
def test_canonical_path_accepts_or_raises_path_error_only(text):
    try:
        result = canonical_path(text)
    except PathError:
        return
    assert result == text
    assert ".." not in text.split("/")
    assert not text.startswith("/")
