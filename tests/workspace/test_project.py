import os
import stat

import pytest

from lorelab.errors import InvalidInput, OutputExistsError, PathError
from lorelab.io import create_output_dir, remove_tree
from lorelab.workspace import (
    MAX_FILE_BYTES,
    FileEntry,
    RunRoot,
    check_layout,
    check_writable,
    write_files,
)
from tests.support.deep_tree import DEPTH, make_deep_tree


def _entry(path, content="x = 1\n"):
    # model_construct skips validation, like a caller that built entries by hand.
    return FileEntry.model_construct(path=path, content=content)


def _mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_run_root_and_projects_are_private_directories(tmp_path):
    with RunRoot(tmp_path) as root:
        project = root.create_project("p1", [FileEntry(path="src/a.py", content="A = 1\n")])
        assert _mode(root.path) == 0o700
        assert _mode(project) == 0o700
        assert _mode(project / "src") == 0o700
        assert (project / "src" / "a.py").read_text() == "A = 1\n"
        assert project.parent == root.path


def test_run_root_without_base_lives_in_the_temp_directory():
    root = RunRoot()
    try:
        assert root.path.is_dir()
        assert root.path.name.startswith("lorelab-run-")
    finally:
        root.cleanup()
    assert not root.path.exists()


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("../escape.py", r"'\.\.'"),
        ("/etc/passwd", "absolute"),
        ("src/../../x.py", r"'\.\.'"),
        ("a\\b.py", "backslash"),
        ("a\x00b", "NUL"),
    ],
)
def test_create_project_refuses_a_bad_path_naming_it_and_writes_nothing(tmp_path, path, problem):
    with RunRoot(tmp_path) as root:
        with pytest.raises(PathError, match=problem) as info:
            root.create_project("p", [_entry("src/ok.py"), _entry(path)])
        assert repr(path)[1:-1] in str(info.value)
        assert not (root.path / "p").exists()
    assert not (tmp_path / "escape.py").exists()


def test_paths_differing_only_by_case_are_refused(tmp_path):
    with RunRoot(tmp_path) as root, pytest.raises(PathError, match="collide"):
        root.create_project("p", [_entry("src/A.py"), _entry("src/a.py")])


def test_directories_differing_only_by_case_are_refused():
    with pytest.raises(PathError, match="directory 'Src' collides"):
        check_layout(["src/a.py", "Src/b.py"])


def test_a_path_that_is_both_file_and_directory_is_refused():
    with pytest.raises(PathError, match="both a file and a directory"):
        check_layout(["src", "src/a.py"])


def test_a_symlinked_directory_in_a_project_is_never_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    with RunRoot(tmp_path) as root:
        project = root.create_project("p", [_entry("README.md", "hi\n")])
        (project / "src").symlink_to(outside)
        with pytest.raises(PathError, match="symlink"):
            write_files(project, [_entry("src/evil.py")])
    assert list(outside.iterdir()) == []


def test_a_symlinked_file_is_never_replaced_or_followed(tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("keep\n")
    with RunRoot(tmp_path) as root:
        project = root.create_project("p", [_entry("README.md", "hi\n")])
        (project / "a.py").symlink_to(target)
        with pytest.raises(PathError, match="symlink"):
            write_files(project, [_entry("a.py", "evil\n")], allow_overwrite=True)
        with pytest.raises(OutputExistsError):
            write_files(project, [_entry("a.py", "evil\n")])
    assert target.read_text() == "keep\n"


def test_write_files_refuses_to_overwrite_unless_allowed(tmp_path):
    with RunRoot(tmp_path) as root:
        project = root.create_project("p", [_entry("src/a.py", "A = 1\n")])
        with pytest.raises(OutputExistsError, match=r"src/a\.py"):
            write_files(project, [_entry("src/a.py", "A = 2\n")])
        assert (project / "src" / "a.py").read_text() == "A = 1\n"
        written = write_files(
            project, [_entry("src/a.py", "A = 2\n"), _entry("src/b.py")], allow_overwrite=True
        )
        assert written == [project / "src" / "a.py", project / "src" / "b.py"]
        assert (project / "src" / "a.py").read_text() == "A = 2\n"
        assert sorted(p.name for p in (project / "src").iterdir()) == ["a.py", "b.py"]


def test_write_files_into_a_missing_project_is_a_clear_error(tmp_path):
    with pytest.raises(PathError, match="no such directory"):
        write_files(tmp_path / "nope", [_entry("a.py")])


def test_an_oversized_file_is_refused(tmp_path):
    with RunRoot(tmp_path) as root, pytest.raises(InvalidInput, match=r"big\.txt"):
        root.create_project("p", [_entry("big.txt", "x" * (MAX_FILE_BYTES + 1))])


@pytest.mark.parametrize("name", ["a/b", "..", "", ".hidden"])
def test_project_names_must_be_one_canonical_segment(tmp_path, name):
    with RunRoot(tmp_path) as root, pytest.raises(PathError):
        root.create_project(name, [])


def test_a_project_name_is_used_once(tmp_path):
    with RunRoot(tmp_path) as root:
        root.create_project("p", [])
        with pytest.raises(OutputExistsError, match="already exists"):
            root.create_project("p", [])


def test_copy_project_copies_a_tree_of_regular_files(tmp_path):
    source = tmp_path / "source"
    (source / "src").mkdir(parents=True)
    (source / "src" / "m.py").write_text("M = 1\n")
    (source / "tests").mkdir()
    (source / "tests" / "test_m.py").write_text("def test_m(): pass\n")
    with RunRoot(tmp_path) as root:
        project = root.copy_project(source, "copy")
        assert (project / "src" / "m.py").read_text() == "M = 1\n"
        assert (project / "tests" / "test_m.py").read_text() == "def test_m(): pass\n"
        assert _mode(project / "src" / "m.py") == 0o600


def test_copy_project_keeps_the_owner_execute_bit_and_nothing_else(tmp_path):
    source = tmp_path / "source"
    (source / "bin").mkdir(parents=True)
    (source / "bin" / "run.sh").write_text("#!/bin/sh\nexit 0\n")
    (source / "bin" / "run.sh").chmod(0o755)
    (source / "bin" / "data.txt").write_text("data\n")
    (source / "bin" / "data.txt").chmod(0o666)
    with RunRoot(tmp_path) as root:
        project = root.copy_project(source, "copy")
        assert _mode(project / "bin" / "run.sh") == 0o700
        assert _mode(project / "bin" / "data.txt") == 0o600
        assert _mode(project / "bin") == 0o700
        assert os.access(project / "bin" / "run.sh", os.X_OK)


def test_copy_project_keeps_real_names_hidden_files_and_deep_trees(tmp_path):
    # A copied tree is a real project: its names are kept (documented exception to the
    # canonical-path rule, which governs file lists from manifests and agents).
    source = tmp_path / "source"
    deep = "/".join(f"d{index}" for index in range(21))
    files = {
        ".hidden/.env": "KEY=1\n",
        ".eslintrc.json": "{}\n",
        "a b/-weird name.py": "W = 1\n",
        "app/[id].tsx": "export {};\n",
        "app/+page.svelte": "<p/>\n",
        f"{deep}/leaf.py": "L = 1\n",
    }
    for path, text in files.items():
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_text(text)
    with RunRoot(tmp_path) as root:
        project = root.copy_project(source, "copy")
        for path, text in files.items():
            assert (project / path).read_text() == text
        assert root.skipped(project) == ()


def test_copy_project_skips_version_control_metadata_and_says_so(tmp_path):
    source = tmp_path / "source"
    (source / ".git" / "objects").mkdir(parents=True)
    (source / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (source / ".git" / "hook").symlink_to("/etc/hostname")  # never looked at
    (source / "vendor" / "lib").mkdir(parents=True)
    (source / "vendor" / "lib" / ".git").write_text("gitdir: ../../.git/modules/lib\n")
    (source / "vendor" / "lib" / "m.py").write_text("M = 1\n")
    (source / ".gitignore").write_text("*.pyc\n")
    with RunRoot(tmp_path) as root:
        project = root.copy_project(source, "copy")
        assert not (project / ".git").exists()
        assert not (project / "vendor" / "lib" / ".git").exists()
        assert (project / "vendor" / "lib" / "m.py").read_text() == "M = 1\n"
        assert (project / ".gitignore").read_text() == "*.pyc\n"
        assert root.skipped(project) == (".git", "vendor/lib/.git")


def test_copy_project_refuses_trees_past_its_depth_and_length_bounds(tmp_path):
    deep_source = tmp_path / "deep"
    deep = deep_source.joinpath(*(f"d{index}" for index in range(34)))
    deep.mkdir(parents=True)
    (deep / "leaf.py").write_text("L = 1\n")
    long_source = tmp_path / "long"
    long_dir = long_source.joinpath(*("x" * 200 for _ in range(6)))
    long_dir.mkdir(parents=True)
    (long_dir / "leaf.py").write_text("L = 1\n")
    with RunRoot(tmp_path) as root:
        with pytest.raises(PathError, match="deeper than 32 directories"):
            root.copy_project(deep_source, "deep")
        with pytest.raises(PathError, match="longer than 1024 characters"):
            root.copy_project(long_source, "long")
        assert root.projects == ()


def test_copy_project_refuses_a_backslash_in_a_name(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    (source / "a\\b.py").write_text("X = 1\n")
    with RunRoot(tmp_path) as root, pytest.raises(PathError, match="backslash"):
        root.copy_project(source, "copy")


def test_copy_project_refuses_a_symlink_inside_the_tree_naming_it(tmp_path):
    source = tmp_path / "source"
    (source / "src").mkdir(parents=True)
    (source / "src" / "m.py").write_text("M = 1\n")
    (source / "src" / "link.py").symlink_to("/etc/hostname")
    with RunRoot(tmp_path) as root:
        with pytest.raises(PathError, match=r"'src/link\.py': is a symlink"):
            root.copy_project(source, "copy")
        assert not (root.path / "copy").exists()


def test_copy_project_refuses_a_fifo(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    os.mkfifo(source / "pipe")
    with RunRoot(tmp_path) as root, pytest.raises(PathError, match="'pipe': not a regular"):
        root.copy_project(source, "copy")


def test_copy_project_refuses_a_symlinked_source(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    with RunRoot(tmp_path) as root, pytest.raises(PathError, match="is a symlink"):
        root.copy_project(tmp_path / "alias", "copy")


def test_cleanup_removes_projects_but_keeps_receipts_and_outside_files(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    receipts = create_output_dir(tmp_path / "receipts")
    receipts.write_json("result.json", {"ok": True})
    root = RunRoot(tmp_path)
    project = root.create_project("p", [_entry("src/a.py")])
    # A test may leave a link to the outside and a read-only directory behind.
    (project / "link").symlink_to(outside)
    locked = project / "locked"
    locked.mkdir()
    (locked / "f.txt").write_text("x")
    locked.chmod(0o500)
    root.cleanup()
    assert not project.exists()
    assert not root.path.exists()
    assert (outside / "keep.txt").read_text() == "keep\n"
    assert (receipts.path / "result.json").is_file()


def test_cleanup_keeps_the_root_when_something_else_lives_in_it(tmp_path):
    root = RunRoot(tmp_path)
    root.create_project("p", [])
    receipts = create_output_dir(root.path / "receipts")
    receipts.write_text("r.txt", "evidence\n")
    root.cleanup()
    assert not (root.path / "p").exists()
    assert (root.path / "receipts" / "r.txt").read_text() == "evidence\n"


def test_cleanup_refuses_a_project_swapped_for_a_symlink(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    root = RunRoot(tmp_path)
    project = root.create_project("p", [])
    project.rmdir()
    project.symlink_to(outside)
    with pytest.raises(PathError, match="no longer a directory"):
        root.cleanup()
    assert (outside / "keep.txt").read_text() == "keep\n"


def test_write_files_refuses_a_path_that_differs_from_an_existing_one_only_by_case(tmp_path):
    with RunRoot(tmp_path) as root:
        project = root.create_project("p", [_entry("Src/a.py"), _entry("README.md")])
        with pytest.raises(PathError, match="'src' collides with existing 'Src'"):
            write_files(project, [_entry("src/b.py")])
        with pytest.raises(PathError, match=r"'readme\.md' collides"):
            write_files(project, [_entry("readme.md")], allow_overwrite=True)
        assert sorted(p.name for p in project.iterdir()) == ["README.md", "Src"]


@pytest.mark.parametrize(
    ("second", "error", "message"),
    [
        ("README.md", OutputExistsError, r"README\.md.: the project already has an entry there"),
        ("readme.md", PathError, r"'readme\.md' collides with existing 'README\.md'"),
        ("SRC/b.py", PathError, r"'SRC' collides with existing 'src'"),
        ("link/b.py", PathError, r"'link' is a symlink"),
        ("README.md/b.py", PathError, r"'README\.md' is not a directory"),
    ],
)
def test_write_files_refused_for_a_later_file_writes_none_of_the_earlier_ones(
    tmp_path, second, error, message
):
    with RunRoot(tmp_path) as root:
        project = root.create_project("p", [_entry("src/a.py"), _entry("README.md")])
        (project / "link").symlink_to(tmp_path)
        with pytest.raises(error, match=message):
            write_files(project, [_entry("tests/test_new.py"), _entry(second)])
        assert not (project / "tests").exists()
        assert sorted(p.name for p in project.iterdir()) == ["README.md", "link", "src"]


def test_check_writable_reports_what_write_files_would_refuse_and_writes_nothing(tmp_path):
    with RunRoot(tmp_path) as root:
        project = root.create_project("p", [_entry("src/a.py")])
        check_writable(project, ["tests/test_new.py", "src/b.py"])
        with pytest.raises(PathError, match="'Src' collides"):
            check_writable(project, ["Src/c.py"])
        with pytest.raises(OutputExistsError, match=r"src/a\.py"):
            check_writable(project, ["src/a.py"])
        check_writable(project, ["src/a.py"], allow_overwrite=True)
        assert sorted(p.name for p in project.iterdir()) == ["src"]


def test_copy_project_skips_virtual_environments_caches_and_the_memory_home(tmp_path):
    # A project with its virtualenv inside (python3 -m venv .venv, the usual setup): the venv's
    # bin/python is a symlink, which copy_project refuses anywhere else.
    source = tmp_path / "source"
    (source / "src").mkdir(parents=True)
    (source / "src" / "m.py").write_text("M = 1\n")
    for venv in (source / ".venv", source / "envs" / "py311"):
        (venv / "bin").mkdir(parents=True)
        (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
        (venv / "bin" / "python").symlink_to("/usr/bin/python3")
    (source / "src" / "__pycache__").mkdir()
    (source / "src" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\x00")
    (source / ".lorelab").mkdir()
    (source / ".lorelab" / "memory.db").write_bytes(b"SQLite format 3\x00")
    (source / "venv-notes").mkdir()  # a directory without the marker is copied
    (source / "venv-notes" / "a.txt").write_text("kept\n")
    with RunRoot(tmp_path) as root:
        project = root.copy_project(source, "copy")
        assert (project / "src" / "m.py").read_text() == "M = 1\n"
        assert (project / "venv-notes" / "a.txt").read_text() == "kept\n"
        for gone in (".venv", "envs/py311", "src/__pycache__", ".lorelab"):
            assert not (project / gone).exists(), gone
        assert root.skipped(project) == (".lorelab", ".venv", "envs/py311", "src/__pycache__")


def test_copy_project_still_refuses_a_symlink_outside_a_virtual_environment(tmp_path):
    source = tmp_path / "source"
    (source / "bin").mkdir(parents=True)
    (source / "bin" / "python").symlink_to("/usr/bin/python3")
    with RunRoot(tmp_path) as root, pytest.raises(PathError, match=r"bin/python.*symlink"):
        root.copy_project(source, "copy")


def test_cleanup_removes_a_tree_deeper_than_the_recursion_limit(tmp_path):
    # Issue 31 item 5: shutil.rmtree raised RecursionError on a 3,000-deep tree left by a test.
    root = RunRoot(tmp_path)
    project = root.create_project("p", [FileEntry(path="a.txt", content="a")])
    make_deep_tree(project, DEPTH)
    (project / "d").chmod(0o500)  # read-only on the way down, too
    root.cleanup()
    assert not root.path.exists()


def test_remove_tree_removes_symlinks_without_following_them(tmp_path):
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "precious.txt").write_text("stay\n")
    doomed = tmp_path / "doomed"
    doomed.mkdir()
    make_deep_tree(doomed, 50)
    (doomed / "d" / "link").symlink_to(keep, target_is_directory=True)
    remove_tree(doomed)
    assert not doomed.exists()
    assert (keep / "precious.txt").read_text() == "stay\n"
