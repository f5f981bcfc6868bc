"""The verdict report as a browser shows it, checked for structure (not pixels): run headless Chromium on the page,
let its inline script run, and read the DOM it leaves (--dump-dom) and a screenshot.

    python .ci/report_structure.py PAGE.html OUT_DIR

Checks, on the DOM after the script: the first claim row comes before the fold holding the run, the environment
and the false-alarm budget; pytest-html's environment table has been moved into a fold below the verdicts; every
claim row has a verdict badge; every thumbnail can be opened full size. Writes OUT_DIR/dom.html and OUT_DIR/report.png.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    sys.exit(f"no headless browser ({', '.join(BROWSERS)}) on PATH: apt-get install chromium")


def run(page: Path, out: Path) -> str:
    out.mkdir(parents=True, exist_ok=True)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--virtual-time-budget=5000"]
    url = page.resolve().as_uri()
    dom = subprocess.run([browser(), *flags, "--dump-dom", url], capture_output=True, text=True, timeout=180)
    if dom.returncode != 0 or "<html" not in dom.stdout:
        sys.exit(f"headless Chromium could not render {page}: {dom.stderr.strip()[-500:]}")
    (out / "dom.html").write_text(dom.stdout)
    shot = out / "report.png"
    subprocess.run(
        [browser(), *flags, "--window-size=1400,1000", f"--screenshot={shot}", url],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    return dom.stdout


def problems(dom: str) -> list[str]:
    found = []
    first_claim = dom.find('class="claim"')
    fold = dom.find('class="run-details"')
    if first_claim < 0:
        found.append("no claim row")
    if fold < 0:
        found.append("no fold for the run, its environment and budget")
    elif first_claim > fold:
        found.append("the run's details come before the first verdict")
    environment = dom.find('id="environment"')
    if environment >= 0 and (first_claim < 0 or environment < first_claim):
        found.append("pytest-html's environment table is still above the verdicts (the page's script did not run)")
    rows = re.findall(r'<tr id="[^"]*" class="claim"[^>]*>(.*?)</tr>', dom, re.S)
    unbadged = [i for i, row in enumerate(rows) if "border-radius:4px" not in row]
    if unbadged:
        found.append(f"{len(unbadged)} claim row(s) without a verdict badge")
    thumbs = re.findall(r'<img class="thumb"[^>]*>', dom)
    if any('tabindex="0"' not in img for img in thumbs):
        found.append("a thumbnail that cannot be opened full size")
    return found


if __name__ == "__main__":
    dom = run(Path(sys.argv[1]), Path(sys.argv[2]))
    wrong = problems(dom)
    if wrong:
        sys.exit("the report's structure in a browser: " + "; ".join(wrong))
    claims = len(re.findall(r'class="claim"', dom))
    print(f"report in headless Chromium: {claims} claim rows first, run details and environment folded below")
