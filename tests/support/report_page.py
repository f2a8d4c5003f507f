"""Read a rendered report back: sections, figures, tables with their cells' exact values, links."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "report" / "data"
EXAMPLES = REPO / "examples"


@dataclass
class Cell:
    text: str = ""
    value: str | None = None
    hrefs: list[str] = field(default_factory=list)
    empty: bool = False

    def number(self) -> float | None:
        """The exact value the cell carries (``data-value``), as a number; None for null."""
        assert self.value is not None, f"cell {self.text!r} has no data-value"
        parsed = json.loads(self.value) if self.value != "null" else None
        return parsed


@dataclass
class Table:
    name: str
    headers: list[str] = field(default_factory=list)
    rows: list[list[Cell]] = field(default_factory=list)
    empty: bool = False

    def column(self, header: str) -> list[Cell]:
        index = self.headers.index(header)
        return [row[index] for row in self.rows]

    def by(self, key: str) -> dict[str, dict[str, Cell]]:
        """Rows keyed by the text of column ``key``, each a mapping header -> cell."""
        return {
            row[self.headers.index(key)].text: dict(zip(self.headers, row, strict=True))
            for row in self.rows
        }


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[str] = []
        self.figures: dict[str, int] = {}
        self.tables: dict[str, list[Table]] = {}
        self.hrefs: list[str] = []
        self.srcs: list[str] = []
        self.tags: set[str] = set()
        self._table: Table | None = None
        self._cell: Cell | None = None
        self._in_head = False
        self._figure: str | None = None
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.add(tag)
        if "data-section" in a:
            self.sections.append(a["data-section"] or "")
        if tag == "figure":
            self._figure = a.get("data-figure") or ""
            self.figures[self._figure] = 0
        if tag == "svg" and self._figure is not None:
            self.figures[self._figure] += 1
        if tag == "table":
            self._table = Table(a.get("data-table") or "")
            self.tables.setdefault(self._table.name, []).append(self._table)
        if tag == "tr" and self._table is not None:
            self._row: list[Cell] = []
        if tag in ("td", "th"):
            self._cell = Cell(value=a.get("data-value"), empty="empty" in (a.get("class") or ""))
            self._in_head = tag == "th"
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"] or "")
            if self._cell is not None:
                self._cell.hrefs.append(a["href"] or "")
        for key in ("src", "srcset", "data", "action", "xlink:href"):
            if a.get(key):
                self.srcs.append(a[key] or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure":
            self._figure = None
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            self._cell.text = " ".join(self._cell.text.split())
            if self._in_head:
                self._table.headers.append(self._cell.text)
            else:
                self._row.append(self._cell)
            self._cell = None
        if tag == "tr" and self._table is not None and getattr(self, "_row", None):
            if self._row[0].empty:
                self._table.empty = True
            else:
                self._table.rows.append(self._row)
            self._row = []
        if tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.text += data


@dataclass
class Page:
    path: Path
    html: str
    sections: list[str]
    figures: dict[str, int]
    tables: dict[str, list[Table]]
    hrefs: list[str]
    srcs: list[str]
    tags: set[str]
    text: str

    def table(self, name: str, index: int = 0) -> Table:
        return self.tables[name][index]

    def receipt_links(self) -> list[str]:
        return [h for h in self.hrefs if not h.startswith("#")]

    def resolve(self, href: str) -> Path:
        return (self.path.parent / unquote(href)).resolve()


def parse(path: Path) -> Page:
    html = path.read_text(encoding="utf-8")
    parser = _Parser()
    parser.feed(html)
    parser.close()
    return Page(
        path,
        html,
        parser.sections,
        parser.figures,
        parser.tables,
        parser.hrefs,
        parser.srcs,
        parser.tags,
        " ".join("".join(parser.text).split()),
    )


def copy_capture(name: str, target: Path) -> Path:
    """A writable copy of the recorded output directory ``name`` (see data/README.md)."""
    destination = target / name
    shutil.copytree(DATA / name, destination)
    return destination


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def lorelab(*args: str) -> Result:
    """The ``lorelab`` command line, in this process (click's runner, stdout and stderr apart)."""
    from click.testing import CliRunner

    from lorelab.cli.main import app

    done = CliRunner().invoke(app, list(args), prog_name="lorelab")
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        raise done.exception
    return Result(done.exit_code, done.stdout, done.stderr)


def lorelab_process(
    *args: str, timeout: float = 600, **kwargs: object
) -> subprocess.CompletedProcess[str]:
    """The real ``lorelab`` program, in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "lorelab", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **kwargs,  # type: ignore[arg-type]
    )
