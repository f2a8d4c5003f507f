import pytest

from lorelab.runners import detect_runner


def _tree(root, files):
    for path in files:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("// test\n")
    return root


@pytest.mark.parametrize(
    ("path", "first"),
    [
        ("test/a.test.mjs", "test/a.test.mjs"),
        ("lib/calc-test.cjs", "lib/calc-test.cjs"),
        ("test/helpers.js", "test/helpers.js"),
        ("src/test-calc.js", "src/test-calc.js"),
        ("calc_test.mjs", "calc_test.mjs"),
    ],
)
def test_any_file_node_would_run_selects_node(tmp_path, path, first):
    assert detect_runner(_tree(tmp_path, [path])) == ("node", f"node test file {first} found")


def test_package_json_selects_node_first(tmp_path):
    _tree(tmp_path, ["package.json"])
    assert detect_runner(tmp_path) == ("node", "package.json found")


@pytest.mark.parametrize(
    "path",
    [
        "node_modules/pkg/test/a.test.js",
        ".venv/lib/test/a.test.js",
        ".tox/py/test/x.js",
        "venv/lib/site-packages/pkg/test/a.js",
        "tests/test_calc.py",
        "src/calc.js",
        "test/data.json",
    ],
)
def test_files_node_would_not_run_or_that_live_in_tooling_select_pytest(tmp_path, path):
    _tree(tmp_path, [path])
    if path.startswith("venv/"):
        (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert detect_runner(tmp_path) == ("pytest", "no package.json or node test file found")


def test_a_symlinked_test_file_does_not_select_node(tmp_path):
    real = tmp_path / "elsewhere.js"
    real.write_text("// test\n")
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "a.test.js").symlink_to(real)
    assert detect_runner(tmp_path / "project")[0] == "pytest"


def test_a_package_json_symlink_does_not_select_node(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").symlink_to("/etc/passwd")
    assert detect_runner(project) == ("pytest", "no package.json or node test file found")


def test_a_package_json_symlink_to_a_real_manifest_does_not_select_node_either(tmp_path):
    manifest = tmp_path / "elsewhere.json"
    manifest.write_text('{"name": "x"}\n')
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").symlink_to(manifest)
    assert detect_runner(project)[0] == "pytest"
