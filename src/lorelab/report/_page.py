"""The page around the sections: one HTML file, its stylesheet inlined, no script, nothing
fetched."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from lorelab.report._html import Html, Section, banner, esc, items, join, tag

CSS: Final = """
:root{--fg:#1f2328;--muted:#57606a;--line:#d0d7de;--bg:#ffffff;--soft:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg)}
header{padding:18px 28px 10px;border-bottom:1px solid var(--line);background:var(--soft)}
header h1{margin:0 0 4px;font-size:22px}
header p{margin:2px 0;color:var(--muted)}
nav{padding:6px 28px;border-bottom:1px solid var(--line);font-size:13px}
nav a{margin-right:14px}
main{padding:8px 28px 40px}
section{margin:22px 0 30px}
h2{font-size:18px;margin:0 0 10px;padding-bottom:4px;border-bottom:1px solid var(--line)}
a{color:#0b57d0}
.banner{border-radius:8px;padding:12px 16px;margin:8px 0 14px;border-left:8px solid #6b7280;
background:#f3f4f6}
.banner ul{margin:6px 0 0;padding-left:20px}
.banner-title{font-size:20px;font-weight:700;margin:0}
.banner-positive{border-color:#1a7f37;background:#e9f7ee}
.banner-negative{border-color:#c62828;background:#fdecec}
.banner-inconclusive{border-color:#9a6700;background:#fff8e1}
.banner-not-evidence{border-color:#6b7280;background:#f1f3f5}
.banner-missing{border-color:#c62828;background:#fff1f0}
.banner-info{border-color:#1f62c4;background:#eaf2fd}
.problems{border:2px solid #c62828;border-radius:8px;padding:8px 16px;background:#fff1f0}
.figure-block{margin:10px 0 18px}
figure{margin:0 0 8px;max-width:100%;overflow-x:auto}
figure svg{max-width:100%;height:auto;display:block}
figure svg.wide{width:100%;min-width:820px;max-width:1600px}
figcaption{color:var(--muted);font-size:12px;max-width:900px;margin-top:4px}
.data{overflow-x:auto;min-width:0}
table[data-table=overview] td.num{text-align:left}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0 12px}
caption{text-align:left;font-weight:600;padding:2px 0 6px}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--soft)}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.unknown{color:var(--muted);font-style:italic}
td.empty{color:var(--muted)}
td:first-child{white-space:nowrap}
.side-by-side{display:grid;grid-template-columns:1fr 1fr;gap:24px;align-items:start}
.side-by-side>div{min-width:0;overflow-x:auto}
.column-head{font-weight:700;font-size:15px;padding:4px 0;border-bottom:2px solid var(--fg)}
.legend{font-size:12px;color:var(--muted)}
.swatch{display:inline-block;width:11px;height:11px;margin:0 4px 0 10px;vertical-align:middle}
@media print{nav{display:none}}
"""


@dataclass(frozen=True, slots=True)
class Column:
    """One directory's part of a page: its heading, problems and sections."""

    title: str
    source: str
    problems: Sequence[str]
    sections: Sequence[Section]


def _problems(problems: Sequence[str], suffix: str = "") -> Html:
    if not problems:
        return Html("")
    return tag(
        "div",
        join(
            [
                tag("p", "What is missing or could not be read", class_="banner-title"),
                items(problems),
            ]
        ),
        class_="problems",
        id="problems" + suffix,
        data_section="problems",
    )


def _nav(sections: Sequence[Section]) -> Html:
    return tag("nav", join(tag("a", s.title, href=f"#{s.id}") for s in sections))


def _document(title: str, header: Html, nav: Html, body: Html) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # No network, ever: nothing but inline styles and data URLs may load.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        f"<title>{esc(title)}</title><style>{CSS}</style></head>"
        f"<body>{header}{nav}<main>{body}</main></body></html>\n"
    )


def single_page(column: Column, version: str) -> str:
    """The page for one directory."""
    header = tag(
        "header",
        join(
            [
                tag("h1", column.title),
                tag("p", f"from {column.source}"),
                tag(
                    "p",
                    f"rendered by lorelab {version} from the receipts; every row links to its "
                    "receipt",
                ),
            ]
        ),
    )
    body = join([_problems(column.problems), *(s.render() for s in column.sections)])
    return _document(column.title, header, _nav(column.sections), body)


def pair_page(
    left: Column, right: Column, verdict: tuple[bool, Sequence[str], Sequence[str]], version: str
) -> str:
    """Two directories of one kind side by side, under the comparability verdict."""
    comparable, reasons, notes = verdict
    title = f"{left.title} vs {right.title}" if left.title != right.title else left.title
    state = "info" if comparable else "missing"
    said = "comparable" if comparable else "NOT comparable"
    head = banner(state, f"The two runs are {said}", [*reasons, *notes])
    header = tag(
        "header",
        join(
            [
                tag("h1", title),
                tag("p", f"left: {left.source}"),
                tag("p", f"right: {right.source}"),
                tag(
                    "p",
                    f"rendered by lorelab {version} from the receipts; every row links to its "
                    "receipt",
                ),
            ]
        ),
    )
    order = list(dict.fromkeys([s.id for s in left.sections] + [s.id for s in right.sections]))
    by_id = [{s.id: s for s in col.sections} for col in (left, right)]
    rows = [
        tag(
            "div",
            join(
                by_id[i][sid].render(suffix)
                if sid in by_id[i]
                else tag("div", f"{sid}: not in this run", class_="unknown")
                for i, suffix in ((0, ""), (1, "-right"))
            ),
            class_="side-by-side",
        )
        for sid in order
    ]
    columns = tag(
        "div",
        join(
            [
                tag(
                    "div",
                    join(
                        [
                            tag("p", f"left: {left.source}", class_="column-head"),
                            _problems(left.problems),
                        ]
                    ),
                ),
                tag(
                    "div",
                    join(
                        [
                            tag("p", f"right: {right.source}", class_="column-head"),
                            _problems(right.problems, "-right"),
                        ]
                    ),
                ),
            ]
        ),
        class_="side-by-side",
    )
    sections = list(left.sections) or list(right.sections)
    tag_id = tag(
        "section",
        join([tag("h2", "Comparability"), head]),
        id="comparability",
        data_section="comparability",
    )
    return _document(title, header, _nav(sections), join([tag_id, columns, *rows]))
