"""The documentation site as a reader sees it, in headless Chromium.

Run by ``make docs-check`` (not by pytest's default collection): serves
``docs/_build/html`` on 127.0.0.1, opens the pages of :data:`PAGES` (home,
model, claims, report, three API pages (trained: the trace's columns, typeset),
two how-tos, two notebooks) in Debian's
Chromium (when missing, it says so and installs the ``chromium`` package with
apt-get, which needs root), and checks that math is typeset (no raw TeX left in the rendered
text), every image loaded, every same-site link resolves (HTTP 200) and the
console shows no errors; where a page holds saved widgets (a notebook's
sliders), the embedder drew them. A screenshot of each page goes to
``docs/_build/screenshots/``. Exit status 1 on any failure, with one line per
problem.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

PAGES = {"home": "index.html", "model": "model.html", "claims": "claims.html",
         "report": "report.html", "api": "api/index.html", "api-reduced": "api/reduced.html",
         "api-trained": "api/trained.html",
         "howto-compare": "howto/compare.html", "howto-figure": "howto/figure.html",
         "notebook": "notebooks/compare_schemes.html",
         "notebook-widgets": "notebooks/mean_field.html"}
#: pages that must show typeset math
MATH_PAGES = ("home", "model", "claims", "report", "api-trained")
RAW_TEX = ("$$", "\\(", "\\[", "\\frac", "\\gamma", "\\dot", "\\beta")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium() -> str:
    """The Chromium on PATH; when there is none, say so, then install Debian's
    ``chromium`` package with apt-get (needs root; about 100 MB)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    print("docs-check: no Chromium on PATH; installing Debian's 'chromium' package "
          "with `apt-get install -y chromium` (system-wide, needs root, ~100 MB)",
          file=sys.stderr, flush=True)
    subprocess.run(["apt-get", "install", "-y", "-q", "chromium"], check=True,
                   stdout=subprocess.DEVNULL)
    return shutil.which("chromium")


def serve(root: Path):
    handler = functools.partial(_Quiet, directory=str(root))
    server = _Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass                     # a browser that cancels a request is not a failure


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def check_page(page, base: str, name: str, path: str, shots: Path) -> list[str]:
    problems, console = [], []
    page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: console.append(str(e)))
    page.on("response", lambda r: console.append(f"HTTP {r.status} for {r.url}")
            if r.status >= 400 else None)
    page.goto(f"{base}/{path}", wait_until="networkidle")
    page.wait_for_timeout(1500)                  # MathJax typesets after load
    page.screenshot(path=str(shots / f"{name}.png"), full_page=False)
    text = page.evaluate("""() => {
        const clone = document.body.cloneNode(true);
        clone.querySelectorAll('mjx-container, pre, code, script, style, .highlight')
             .forEach(e => e.remove());
        return clone.innerText; }""")
    for tex in RAW_TEX:
        if tex in text:
            i = text.index(tex)
            context = " ".join(text[max(0, i - 60):i + 60].split())
            problems.append(f"{name}: raw TeX {tex!r} left in the rendered text: ...{context}...")
    if name in MATH_PAGES and page.locator("mjx-container").count() == 0:
        problems.append(f"{name}: no typeset math (mjx-container) on the page")
    broken = page.evaluate("""() => Array.from(document.images)
        .filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)""")
    problems += [f"{name}: image did not load: {src}" for src in broken]
    problems += widgets_drawn(page, name)
    links = page.evaluate("() => Array.from(document.links).map(a => a.href)")
    for href in sorted(set(links)):
        url = urllib.parse.urldefrag(href).url
        if url.startswith(base) and status(url) != 200:
            problems.append(f"{name}: broken link {url}")
    problems += [f"{name}: console error: {msg}" for msg in console]
    return problems


def widgets_drawn(page, name: str) -> list[str]:
    """Every saved widget view on the page (``script`` of the widget-view
    type) was replaced by a drawn widget (the embedder's ``.jupyter-widgets``
    element; the sliders of ``symdyn.output.explore``)."""
    views = page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count()
    if not views:
        return []
    page.wait_for_timeout(1000)                  # the embedder draws after load
    drawn = page.locator(".jupyter-widgets").count()
    controls = page.locator(".widget-slider, .widget-dropdown, .widget-text").count()
    if drawn == 0 or controls == 0:
        return [f"{name}: {views} saved widget view(s) but none drawn ({drawn} widget "
                f"elements, {controls} sliders, menus or text boxes): is the embedder in "
                "_static?"]
    return []


BAD_PAGE = """<html><body><p>Raw $$\\frac{1}{2}$$ left untypeset.</p>
<img src="missing.png"><a href="nowhere.html">a broken link</a>
<script type="application/vnd.jupyter.widget-view+json">{"model_id": "x"}</script>
</body></html>"""


def negative_control(browser) -> None:
    """The check must fail on a page with raw TeX, a missing image, a
    broken link and a saved widget that no embedder draws; raise if it does
    not (a check that cannot fail proves nothing)."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "index.html").write_text(BAD_PAGE)
        server = serve(Path(folder))
        base = f"http://127.0.0.1:{server.server_address[1]}"
        problems = check_page(browser.new_page(), base, "control", "index.html",
                              Path(folder))
        server.shutdown()
    kinds = {"raw TeX": False, "image did not load": False, "broken link": False,
             "none drawn": False}
    for line in problems:
        for k in kinds:
            kinds[k] |= k in line
    if not all(kinds.values()):
        raise SystemExit(f"docs-check: the negative control was not caught: {kinds}")


def main(root: str = "docs/_build/html") -> int:
    from playwright.sync_api import sync_playwright

    root = Path(root)
    if not (root / "index.html").exists():
        print(f"docs-check: {root}/index.html not found; run `make docs` first",
              file=sys.stderr)
        return 2
    shots = root.parent / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    server = serve(root)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    problems = []
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            profile, executable_path=chromium(), args=FLAGS, headless=True,
            viewport={"width": 1280, "height": 900})
        negative_control(browser)
        for name, path in PAGES.items():
            problems += check_page(browser.new_page(), base, name, path, shots)
        browser.close()
    server.shutdown()
    for line in problems:
        print(f"docs-check: {line}", file=sys.stderr)
    print(f"docs-check: {len(PAGES)} pages, {len(problems)} problems; screenshots in {shots}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
