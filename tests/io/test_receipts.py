import json
import os
import stat

import pytest

from lorelab.errors import InputFileError, OutputExistsError, PathError
from lorelab.io import create_output_dir


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_output_dir_is_created_0700_and_receipts_0600_even_with_umask_000(tmp_path):
    old = os.umask(0)
    try:
        out = create_output_dir(tmp_path / "out")
        written = out.write_json("summary.json", {"a": 1})
        nested = out.subdir("trials")
        nested.write_text("t1.md", "# trial\n")
    finally:
        os.umask(old)
    assert mode(tmp_path / "out") == 0o700
    assert mode(written) == 0o600
    assert mode(tmp_path / "out" / "trials") == 0o700
    assert mode(tmp_path / "out" / "trials" / "t1.md") == 0o600
    assert json.loads(written.read_text()) == {"a": 1}


def test_existing_file_as_output_path_is_refused(tmp_path):
    target = tmp_path / "out"
    target.write_text("keep me")
    with pytest.raises(OutputExistsError, match="already exists"):
        create_output_dir(target)
    assert target.read_text() == "keep me"


def test_existing_directory_as_output_path_is_refused(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(OutputExistsError):
        create_output_dir(tmp_path / "out")


def test_dangling_symlink_as_output_path_is_refused(tmp_path):
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "missing")
    with pytest.raises(OutputExistsError):
        create_output_dir(link)
    assert not (tmp_path / "missing").exists()


def test_missing_parents_are_created(tmp_path):
    out = create_output_dir(tmp_path / "a" / "b" / "out")
    assert out.path.is_dir()


def test_receipt_written_twice_is_refused_and_keeps_the_first(tmp_path):
    out = create_output_dir(tmp_path / "out")
    out.write_json("r.json", {"first": True})
    with pytest.raises(OutputExistsError, match="never replaced"):
        out.write_json("r.json", {"first": False})
    assert json.loads((out.path / "r.json").read_text()) == {"first": True}


def test_no_temporary_files_are_left_behind(tmp_path):
    out = create_output_dir(tmp_path / "out")
    out.write_json("r.json", {"x": 1})
    with pytest.raises(OutputExistsError):
        out.write_json("r.json", {"x": 2})
    assert sorted(os.listdir(out.path)) == ["r.json"]
    assert out.written == ["r.json"]


@pytest.mark.parametrize("name", ["a/b.json", "../x.json", ".hidden", "..", "", "a\\b", "x..json"])
def test_invalid_receipt_names_are_refused(tmp_path, name):
    out = create_output_dir(tmp_path / "out")
    with pytest.raises(PathError, match="receipt name"):
        out.write_json(name, {})
    assert os.listdir(out.path) == []


def test_write_is_atomic_via_link_so_a_concurrent_writer_cannot_replace(tmp_path, monkeypatch):
    out = create_output_dir(tmp_path / "out")
    original_link = os.link

    def race(src, dst):
        # Another writer lands the same receipt between our check and our link.
        with open(dst, "w") as handle:
            handle.write("theirs")
        return original_link(src, dst)

    monkeypatch.setattr(os, "link", race)
    with pytest.raises(OutputExistsError):
        out.write_text("r.txt", "ours")
    assert (out.path / "r.txt").read_text() == "theirs"
    assert sorted(os.listdir(out.path)) == ["r.txt"]


def test_output_path_under_a_file_is_a_clear_input_error(tmp_path):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(InputFileError, match="afile/out"):
        create_output_dir(tmp_path / "afile" / "out")


def test_output_path_that_cannot_be_created_is_a_clear_input_error():
    with pytest.raises(InputFileError, match="cannot create the output directory"):
        create_output_dir("/proc/lorelab-cannot-exist/out")


def test_receipts_and_their_directory_are_fsynced(tmp_path, monkeypatch):
    out = create_output_dir(tmp_path / "out")
    synced = []
    original = os.fsync

    def record(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return original(fd)

    monkeypatch.setattr(os, "fsync", record)
    out.write_json("r.json", {"a": 1})
    assert any(path.startswith(str(out.path / ".r.json.")) for path in synced)
    assert str(out.path) in synced
