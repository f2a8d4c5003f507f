"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``):
load a page, collect console errors and exceptions, measure elements and the layout of every
figure's text and dots, take a screenshot.

The protocol's pipe transport: commands are JSON objects terminated by NUL, written to the
browser's fd 3; responses and events come back the same way on its fd 4
(https://chromedevtools.github.io/devtools-protocol/, "--remote-debugging-pipe").
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.missing_tools import require

TIMEOUT_S = 60


def chromium() -> str:
    """Headless Chromium's path; without it the test skips, naming it (CI requires it)."""
    return require("chromium", "chromium", "chromium-browser")


@dataclass
class Browser:
    process: subprocess.Popen[bytes]
    to_browser: int
    from_browser: int
    events: list[dict[str, Any]] = field(default_factory=list)
    _buffer: bytes = b""
    _next: int = 0

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            assert left > 0, "the browser did not answer in time"
            if select.select([self.from_browser], [], [], left)[0]:
                chunk = os.read(self.from_browser, 1 << 20)
                assert chunk, "the browser closed its pipe"
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next += 1
        command: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session is not None:
            command["sessionId"] = session
        os.write(self.to_browser, json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            message = self._read_message(deadline)
            if message.get("id") == self._next:
                assert "error" not in message, message
                return message["result"]
            self.events.append(message)

    def wait_for(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT_S
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            message = self._read_message(deadline)
            self.events.append(message)
            if message.get("method") == method:
                return message


@dataclass
class Rendered:
    errors: list[str]
    figures: list[dict[str, float]]
    screenshot: bytes
    layout: list[dict[str, Any]] = field(default_factory=list)
    """Per figure: its name, the widths of its SVG and of the figure, and every layout problem
    found (see ``_LAYOUT``)."""
    legibility: dict[str, Any] = field(default_factory=dict)
    """``smallestText``: the smallest chart text as drawn, in px, and where
    (``smallestWhere``); ``brokenNames``: first-column table cells laid out on more than one
    line (see ``_LEGIBILITY``)."""
    boxes: list[dict[str, Any]] = field(default_factory=list)
    """Per figure, in page order: its name, its SVG's box, and the box of every ``text`` (its
    own text, and its ``<title>``) and every ``circle`` (its ``<title>``), as laid out (see
    ``_BOXES``)."""


_MEASURE = """JSON.stringify([...document.querySelectorAll('figure[data-figure]')].map(f => {
  const svg = f.querySelector('svg');
  const r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  return {name: f.dataset.figure, width: r.width, height: r.height,
          marks: svg ? svg.querySelectorAll('rect,circle,line').length : 0};
}))"""


# Measured in the page as laid out (the viewport is as tall as the document, so that every point
# can be hit-tested). A problem is one of:
#   clipped  a text box reaches outside its SVG's box (the SVG clips it there);
#   overlap  two text boxes of one figure intersect by more than half a pixel each way;
#   cut      a label was shortened with an ellipsis;
#   hidden   under a quarter of a dot's own pixels show: something drawn later covers it.
_LAYOUT = """JSON.stringify([...document.querySelectorAll('figure[data-figure]')].map(f => {
  const svg = f.querySelector('svg');
  if (!svg) return {name: f.dataset.figure, svgWidth: 0, figureWidth: 0, problems: []};
  const box = svg.getBoundingClientRect(), tol = 0.5, problems = [];
  const texts = [...svg.querySelectorAll('text')]
    .map(t => [t.textContent, t.getBoundingClientRect()]);
  for (const [text, r] of texts) {
    if (r.left < box.left - tol || r.right > box.right + tol || r.top < box.top - tol ||
        r.bottom > box.bottom + tol) problems.push(`clipped: ${text}`);
    if (text.endsWith('\u2026')) problems.push(`cut: ${text}`);
  }
  texts.forEach(([a, p], i) => texts.slice(i + 1).forEach(([b, q]) => {
    const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
    const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
    if (w > tol && h > tol) problems.push(`overlap: ${a} / ${b}`);
  }));
  for (const c of svg.querySelectorAll('circle')) {
    const r = c.getBoundingClientRect(), cx = (r.left + r.right) / 2, cy = (r.top + r.bottom) / 2;
    const radius = r.width / 2;
    let own = 0, shown = 0;
    for (let x = r.left + 0.5; x < r.right; x += 1) {
      for (let y = r.top + 0.5; y < r.bottom; y += 1) {
        if ((x - cx) ** 2 + (y - cy) ** 2 > (radius - 0.5) ** 2) continue;
        own += 1;
        if (document.elementFromPoint(x, y) === c) shown += 1;
      }
    }
    const title = c.querySelector('title');
    if (own && shown / own < 0.25) problems.push(`hidden: ${title ? title.textContent : 'dot'}`);
  }
  return {name: f.dataset.figure, svgWidth: box.width, figureWidth: f.getBoundingClientRect().width,
          problems};
}))"""


# How legible the page is as laid out: the smallest chart text as drawn (its font size times the
# SVG's scale), and the names (a table's first column) broken over two lines.
_LEGIBILITY = """JSON.stringify((() => {
  let smallest = 1e9, where = '';
  for (const svg of document.querySelectorAll('figure svg')) {
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    for (const t of svg.querySelectorAll('text')) {
      const size = parseFloat(t.getAttribute('font-size') || '12') * scale;
      if (size < smallest) { smallest = size; where = t.textContent; }
    }
  }
  const broken = [];
  for (const td of document.querySelectorAll('td:first-child')) {
    const range = document.createRange();
    range.selectNodeContents(td);
    const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
    if (lines.size > 1) broken.push(td.textContent);
  }
  return {smallestText: smallest, smallestWhere: where, brokenNames: broken};
})())"""


# Boxes as laid out, in page pixels: {left, right, top, bottom} (and the centre of a circle).
_BOXES = """JSON.stringify([...document.querySelectorAll('figure[data-figure]')].map(f => {
  const box = r => ({left: r.left, right: r.right, top: r.top, bottom: r.bottom});
  const svg = f.querySelector('svg');
  if (!svg) return {name: f.dataset.figure, svg: null, texts: [], circles: []};
  return {
    name: f.dataset.figure,
    svg: box(svg.getBoundingClientRect()),
    texts: [...svg.querySelectorAll('text')].map(t => {
      const title = t.querySelector('title');
      const own = [...t.childNodes].filter(n => n.nodeType === 3).map(n => n.data).join('');
      return {text: own, title: title ? title.textContent : null,
              ...box(t.getBoundingClientRect())};
    }),
    circles: [...svg.querySelectorAll('circle')].map(c => {
      const r = c.getBoundingClientRect(), title = c.querySelector('title');
      return {title: title ? title.textContent : null, cx: (r.left + r.right) / 2,
              cy: (r.top + r.bottom) / 2, ...box(r)};
    }),
  };
}))"""


def _onto_3_and_4(read: int, write: int) -> None:
    # In the child: the browser reads commands on fd 3 and writes on fd 4. Move both ends above
    # 10 first so that placing one cannot overwrite the other.
    high_read = fcntl.fcntl(read, fcntl.F_DUPFD, 10)
    high_write = fcntl.fcntl(write, fcntl.F_DUPFD, 10)
    os.dup2(high_read, 3)
    os.dup2(high_write, 4)


def render(page: Path, user_data: Path, width: int = 1280) -> Rendered:
    """Load ``page`` in headless Chromium; its console errors, figure sizes and a screenshot."""
    to_read, to_browser = os.pipe()
    from_browser, to_write = os.pipe()
    argv = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
            "--no-first-run", f"--user-data-dir={user_data}", "about:blank"]  # fmt: skip
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(3, 4),
        preexec_fn=lambda: _onto_3_and_4(to_read, to_write),
    )
    os.close(to_read)
    os.close(to_write)
    browser = Browser(process, to_browser, from_browser)
    try:
        return _drive(browser, page, width)
    finally:
        os.close(to_browser)
        os.close(from_browser)
        process.kill()
        process.wait(timeout=TIMEOUT_S)


def _drive(browser: Browser, page: Path, width: int) -> Rendered:
    targets = browser.send("Target.getTargets")["targetInfos"]
    target = next(t for t in targets if t["type"] == "page")
    session = browser.send("Target.attachToTarget", targetId=target["targetId"], flatten=True)[
        "sessionId"
    ]
    for domain in ("Page", "Runtime", "Log"):
        browser.send(f"{domain}.enable", session)
    browser.send("Emulation.setDeviceMetricsOverride", session, width=width, height=900,
                 deviceScaleFactor=1, mobile=False)  # fmt: skip
    browser.events.clear()
    browser.send("Page.navigate", session, url=page.resolve().as_uri())
    browser.wait_for("Page.loadEventFired")
    figures = _evaluate(browser, session, _MEASURE)
    # As tall as the document (bounded), so that hit-testing reaches every dot.
    height = _evaluate(browser, session, "document.documentElement.scrollHeight")
    browser.send("Emulation.setDeviceMetricsOverride", session, width=width,
                 height=min(max(int(height), 900), 16_000), deviceScaleFactor=1,
                 mobile=False)  # fmt: skip
    layout = _evaluate(browser, session, _LAYOUT)
    legibility = _evaluate(browser, session, _LEGIBILITY)
    boxes = _evaluate(browser, session, _BOXES)
    shot = browser.send("Page.captureScreenshot", session, format="png", captureBeyondViewport=True)
    errors = [_error(e) for e in browser.events if _error(e)]
    return Rendered(errors, figures, base64.b64decode(shot["data"]), layout, legibility, boxes)


def _evaluate(browser: Browser, session: str, expression: str) -> Any:
    result = browser.send("Runtime.evaluate", session, expression=expression, returnByValue=True)
    value = result["result"]["value"]
    return json.loads(value) if isinstance(value, str) else value


def _error(event: dict[str, Any]) -> str:
    params = event.get("params", {})
    method = event.get("method")
    if method == "Runtime.exceptionThrown":
        return json.dumps(params.get("exceptionDetails", {}))
    if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
        return json.dumps(params.get("args", []))
    if method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
        return params["entry"].get("text", "")
    return ""
