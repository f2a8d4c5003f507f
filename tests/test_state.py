"""The user's private state directory: only what this user alone can have written is read."""

from __future__ import annotations

import os

import pytest

from lorelab._state import (
    NotPrivate,
    private_dir,
    read_private,
    state_dir,
    trust_home,
    untrusted_reason,
)


def test_the_state_directory_is_made_private_and_a_loose_one_is_refused():
    made = private_dir("servers", create=True)
    assert made == state_dir() / "servers"
    assert os.stat(made).st_mode & 0o777 == 0o700
    made.chmod(0o755)
    with pytest.raises(NotPrivate, match="mode 0755 lets others in"):
        private_dir("servers")


def test_a_state_file_that_is_a_symlink_or_readable_by_others_is_refused(tmp_path):
    folder = private_dir("servers", create=True)
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    target.chmod(0o600)
    link = folder / "link.json"
    link.symlink_to(target)
    with pytest.raises(NotPrivate):
        read_private(link)
    loose = folder / "loose.json"
    loose.write_text("{}")
    loose.chmod(0o644)
    with pytest.raises(NotPrivate, match="mode 0644"):
        read_private(loose)


def test_a_symlinked_memory_home_is_never_trusted(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "project" / ".lorelab"
    link.parent.mkdir()
    link.symlink_to(real)
    with pytest.raises(NotPrivate, match="symlink"):
        trust_home(link)
    assert "symlink" in (untrusted_reason(link) or "")
