"""Make the README's pictures from the current code, or check that they are current.

Each picture in docs/images is a page of `lorelab report` shot by headless Chromium: the default
learning run (the README's command 1) and the conditions example. Beside each PNG is the SHA-256
of the HTML that produced it (NAME.png.sha256), after leaving out what differs between two runs
of the same code: durations, the time chart, and the random trial order (its seed, and the
numbered receipt files the links name), and the interpreter's path in the worker's and the
host's argv (a clone in another folder has another one). `--check` makes the pages again and
exits 1 naming every picture whose page changed: then run this script without `--check`. Pixels
are never compared.

    python scripts/make_images.py            # remake the pictures (about 4 min on 2 idle cores)
    python scripts/make_images.py --check    # CI: exit 1 when a picture is stale
    python scripts/make_images.py --check --runs .     # reuse ./out/learning and ./out/cond
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
EXAMPLES = ROOT / "examples" / "conditions"
WINDOW = (1400, 2000)


@dataclass(frozen=True)
class Picture:
    """One picture: its file name and the run directory (under the work directory) it shows."""

    name: str
    run: str


PICTURES = (
    Picture("report-learning.png", "out/learning"),
    Picture("report-conditions.png", "out/cond"),
)

_TIME_FIGURE = re.compile(r'<figure[^>]*data-figure="time".*?</figure>', re.DOTALL)
_TIME_CELL = re.compile(r'data-value="[^"]*">\d+(?:\.\d+)? (?:ms|s)</td>')
_DURATION = re.compile(r"\b\d+(?:\.\d+)? (?:ms|s)\b")
_ORDER_SEED = re.compile(r'(order seed</td><td class="num") data-value="\d+">\d+<')
_HREF = re.compile(r' href="[^"]*"')


def normalised(html: str) -> str:
    """The page without what two runs of the same code disagree on: how long things took, the
    random trial order (its seed, and so the numbered receipt files every link names), where the
    interpreter that ran the worker and the host lives."""
    html = html.replace(sys.executable, "python")
    html = _TIME_FIGURE.sub('<figure data-figure="time"></figure>', html)
    html = _TIME_CELL.sub('data-value="T">T</td>', html)
    html = _ORDER_SEED.sub(r'\1 data-value="S">S<', html)
    html = _HREF.sub("", html)
    return _DURATION.sub("T", html)


def page_hash(html: str) -> str:
    return hashlib.sha256(normalised(html).encode("utf-8")).hexdigest()


def _lorelab(*args: str, cwd: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lorelab", *args], cwd=cwd, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    if done.returncode not in (0, 1):
        raise SystemExit(f"lorelab {' '.join(args)} exited {done.returncode}: {done.stderr}")


def run_evaluations(work: Path) -> None:
    """The default learning run and the conditions example, under ``work/out`` (relative paths,
    so that each page's header reads "from out/...", as in the README)."""
    _lorelab("eval", "learning", "run", "--dataset", "default", "--agent", "fixture", "--quiet",
             "--output", "out/learning", cwd=work)  # fmt: skip
    _lorelab("eval", "conditions", "run", "--manifest", str(EXAMPLES / "conditions.json"),
             "--host", "fixture-host", "--output", "out/cond", "--home", "out/cond-home",
             "--seed-memory", str(EXAMPLES / "memory_seed.json"), "--quiet", cwd=work)  # fmt: skip


def render(work: Path, picture: Picture) -> Path:
    page = work / f"{picture.name}.html"
    _lorelab("report", picture.run, "--output", str(page), cwd=work)
    return page


def shoot(page: Path, target: Path) -> None:
    chromium = (
        os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )
    if chromium is None:
        raise SystemExit("missing: chromium (scripts/install-system-deps installs it)")
    subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--window-size={WINDOW[0]},{WINDOW[1]}", f"--screenshot={target}", page.as_uri()],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip


def stale(images: Path, pages: dict[str, Path]) -> list[str]:
    """The pictures whose stored hash is not their page's."""
    out = []
    for name, page in pages.items():
        stored = images / f"{name}.sha256"
        recorded = stored.read_text().split()[0] if stored.is_file() else None
        if recorded != page_hash(page.read_text(encoding="utf-8")):
            out.append(name)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="Exit 1 when a picture is stale.")
    parser.add_argument(
        "--runs", type=Path, help="Reuse DIR/out/learning and DIR/out/cond instead of running."
    )
    parser.add_argument("--images", type=Path, default=IMAGES)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as temporary:
        work = args.runs.resolve() if args.runs else Path(temporary)
        if args.runs is None:
            run_evaluations(work)
        pages = {p.name: render(work, p) for p in PICTURES}
        if args.check:
            names = stale(args.images, pages)
            for name in names:
                print(
                    f"stale: docs/images/{name}: run python scripts/make_images.py", file=sys.stderr
                )
            return 1 if names else 0
        for name, page in pages.items():
            shoot(page, args.images / name)
            digest = page_hash(page.read_text(encoding="utf-8"))
            (args.images / f"{name}.sha256").write_text(
                f"{digest}  {name} (normalised report HTML)\n"
            )
            print(f"wrote docs/images/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
