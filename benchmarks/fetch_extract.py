"""How well HTML-to-Markdown libraries extract the main content of the fetch_url test pages.

For each candidate that is importable here: import time in a fresh interpreter (median),
conversion time per page (median), characters out, article markers kept (of 3 per page)
and boilerplate markers leaked, on the article, documentation and directory-listing
pages of tests/webserver.py. `trafilatura` is what fetch_url uses (through
swival.tools.fetch_convert); the others are measured only when installed:

    pip install readability-lxml markdownify html2text   # optional, to compare
    python benchmarks/fetch_extract.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.webserver import ARTICLE_PAGE, DOCS_PAGE, INDEX_PAGE  # noqa: E402

PAGES = {"article": ARTICLE_PAGE, "docs": DOCS_PAGE, "index": INDEX_PAGE}
MARKERS = {"article": ("MARKER-ONE", "MARKER-TWO", "MARKER-THREE"),
           "docs": ("MARKER-ONE", "MARKER-TWO", "MARKER-THREE"),
           "index": ("swival-0.tar.gz", "swival-10.tar.gz", "swival-19.tar.gz")}
IMPORTS = {
    "trafilatura (used)": "import trafilatura",
    "readability-lxml + markdownify": "import readability, markdownify",
    "markdownify + tag stripping": "import markdownify, bs4",
    "html2text (no extraction)": "import html2text",
}


def _trafilatura() -> Callable[[str], str]:
    from swival.tools.fetch_convert import html_to_markdown

    return lambda page: html_to_markdown(page, "http://example.test/")


def _readability() -> Callable[[str], str]:
    from markdownify import markdownify
    from readability import Document

    return lambda page: markdownify(Document(page).summary(html_partial=True),
                                    heading_style="ATX")


def _markdownify() -> Callable[[str], str]:
    from bs4 import BeautifulSoup
    from markdownify import markdownify

    def convert(page: str) -> str:
        soup = BeautifulSoup(page, "html.parser")
        for tag in soup(["script", "style", "nav", "header", "footer", "aside", "form"]):
            tag.decompose()
        main = soup.find("main") or soup.find("article") or soup.find(role="main") or soup
        return markdownify(str(main), heading_style="ATX")

    return convert


def _html2text() -> Callable[[str], str]:
    import html2text

    def convert(page: str) -> str:
        parser = html2text.HTML2Text()
        parser.body_width = 0
        return parser.handle(page)

    return convert


BUILDERS = dict(zip(IMPORTS, (_trafilatura, _readability, _markdownify, _html2text),
                    strict=True))


def import_ms(statement: str, repeat: int) -> float:
    code = f"import time; t = time.perf_counter(); {statement}; " \
           "print((time.perf_counter() - t) * 1000)"
    runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True).stdout) for _ in range(repeat)]
    return statistics.median(runs)


def measure(name: str, repeat: int) -> list[str] | None:
    try:
        convert = BUILDERS[name]()
    except ImportError:
        return None
    cells = [name, f"{import_ms(IMPORTS[name], repeat):.0f}"]
    for page, html in PAGES.items():
        times = []
        for _ in range(max(repeat, 3)):
            started = time.perf_counter()
            out = convert(html)
            times.append((time.perf_counter() - started) * 1000)
        out = out.replace("\\_", "_").replace("\\-", "-")
        kept = sum(marker in out for marker in MARKERS[page])
        leaked = out.count("BOILERPLATE-")
        cells.append(f"{statistics.median(times):.1f} ms, {len(out)} chars, "
                     f"{kept}/3 kept, {leaked} leaked")
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = ", ".join(f"{page} {len(html)} chars" for page, html in PAGES.items())
    print(f"Pages: {sizes}. Python {sys.version.split()[0]}.\n")
    print("| library | import ms | article | docs | index |")
    print("|---|---:|---|---|---|")
    for name in IMPORTS:
        cells = measure(name, args.repeat)
        if cells is None:
            print(f"| {name} | not installed | | | |")
        else:
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
