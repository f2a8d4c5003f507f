"""scripts/make_images.py: a picture is stale when the page that made it changed, and only
then; what two runs of the same code disagree on (durations) never makes it stale."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("make_images", ROOT / "scripts/make_images.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_images"] = module
    spec.loader.exec_module(module)
    return module


make_images = _load()

PAGE = """<p>label: advance, +0.500; 39 passed</p>
<table><tr><td class="num" data-value="27067">27.1 s</td></tr></table>
<figure class="fig" data-figure="time"><svg><rect width="812.3"/></svg></figure>
<p>elapsed 206.3 s, setup 85 ms</p>
<tr><td>order seed</td><td class="num" data-value="1371394815">1371394815</td></tr>
<a href="out/learning/trials/005-normalize-r1-memory.json" class="receipt">memory</a>"""


def test_durations_the_time_chart_and_the_trial_order_do_not_change_the_hash():
    other = (
        PAGE.replace("27067", "31002")
        .replace("27.1 s", "31.0 s")
        .replace("812.3", "640.0")
        .replace("206.3 s", "99.9 s")
        .replace("85 ms", "91 ms")
        .replace("1371394815", "588256873")
        .replace("005-normalize", "001-normalize")
    )
    assert make_images.page_hash(other) == make_images.page_hash(PAGE)


def test_a_changed_result_changes_the_hash():
    changed = PAGE.replace("advance, +0.500; 39 passed", "inconclusive, +0.375; 37 passed")
    assert make_images.page_hash(changed) != make_images.page_hash(PAGE)


def test_check_names_every_stale_picture(tmp_path):
    images, pages = tmp_path / "images", tmp_path / "pages"
    images.mkdir()
    pages.mkdir()
    current, old = pages / "a.html", pages / "b.html"
    current.write_text(PAGE)
    old.write_text(PAGE.replace("advance", "inconclusive"))
    (images / "a.png.sha256").write_text(f"{make_images.page_hash(PAGE)}  a.png\n")
    (images / "b.png.sha256").write_text(f"{make_images.page_hash(PAGE)}  b.png\n")
    found = make_images.stale(images, {"a.png": current, "b.png": old, "c.png": current})
    assert found == ["b.png", "c.png"]  # c.png has no stored hash: never made by the script


def test_every_readme_picture_has_its_page_hash_beside_it():
    for picture in make_images.PICTURES:
        assert (ROOT / "docs" / "images" / picture.name).is_file()
        stored = (ROOT / "docs" / "images" / f"{picture.name}.sha256").read_text().split()[0]
        assert len(stored) == 64


def test_a_clone_in_another_folder_hashes_the_same_page(monkeypatch):
    """The worker's argv names the interpreter that ran it: a fresh clone's is elsewhere."""
    hashes = []
    for interpreter in ("/work/main/.venv/bin/python", "/tmp/clone/.venv/bin/python"):
        monkeypatch.setattr(sys, "executable", interpreter)
        page = f"{PAGE}<tr><td>worker argv</td><td>{interpreter} -m lorelab.testing.fixture</td>"
        hashes.append(make_images.page_hash(page))
    assert hashes[0] == hashes[1]
