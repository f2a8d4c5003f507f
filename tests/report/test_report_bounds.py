"""``lorelab report`` bounds what a page shows of any one string (issue 31, item 16): a receipt
holding a 30 MB string gives a page of bounded size, in bounded memory."""

import json
import subprocess
import sys
from pathlib import Path

from lorelab.evaluation.context import scan_sessions
from lorelab.report._html import esc
from tests.support.sessions import Claude

HUGE = 30 * 1024 * 1024
SHOWN_CHARACTERS = 2000  # the bound docs/report.md states


def _scan_with_a_huge_string(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    Claude(session_id="first").user("go").say("done").write(folder / "s.jsonl")
    out = tmp_path / "scan"
    scan_sessions([str(folder)], output=str(out))
    receipt = out / "context-scan.json"
    data = json.loads(receipt.read_text())
    data["sessions"][0]["sessionId"] = "<" + "x" * HUGE + ">"
    receipt.chmod(0o600)
    receipt.write_text(json.dumps(data))
    return out


def test_a_30_mb_string_in_a_receipt_gives_a_small_page_in_bounded_memory(tmp_path):
    out = _scan_with_a_huge_string(tmp_path)
    page = tmp_path / "report.html"
    # The child's peak resident memory, read by the child itself from /proc/self/status (VmHWM,
    # in KiB). Not ru_maxrss: Linux carries it across execve, so a child started from a large
    # process (a pytest worker late in a run) reports its parent's peak as its own.
    code = (
        "import sys\n"
        "from lorelab.cli.main import main\n"
        "sys.argv = ['lorelab', 'report', sys.argv[1], '--output', sys.argv[2]]\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        "    status = open('/proc/self/status').read().split('VmHWM:')[1]\n"
        "    peak = int(status.split()[0])\n"
        "    print('peak-kib', peak, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(out), str(page)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    peak_mib = int(done.stderr.split("peak-kib")[-1].split()[0]) / 1024
    text = page.read_text()
    assert len(text.encode()) < 1024 * 1024, len(text)
    assert "x" * (SHOWN_CHARACTERS + 1) not in text
    assert f"{HUGE + 2 - SHOWN_CHARACTERS} more characters not shown" in text
    # The receipt alone is 30 MB of text read, parsed and validated: a few copies of it are
    # unavoidable, more are not.
    # Measured: 3,698 MiB before the bound (the depth check's regular expression kept state
    # per character of the string), 141 MiB after.
    assert peak_mib < 400, peak_mib


def test_a_string_within_the_bound_is_shown_whole_and_a_longer_one_is_cut_and_says_so():
    fits = "a" * SHOWN_CHARACTERS
    assert esc(fits) == fits
    cut = esc("<" * (SHOWN_CHARACTERS + 10))
    assert cut.startswith("&lt;" * SHOWN_CHARACTERS)
    assert "10 more characters not shown" in cut
