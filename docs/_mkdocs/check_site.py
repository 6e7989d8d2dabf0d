"""After `mkdocs build` (`make docs`): every name in ``ntkcond.__all__`` has its entry (an
HTML anchor ``id="ntkcond.NAME"``) in the built API reference, and every notebook its page.

Usage: python docs/_mkdocs/check_site.py [SITE_DIR]   (default site/); exit 1 naming what
is missing.
"""
from __future__ import annotations

import os
import re
import sys


def missing_entries(html: str, names) -> list[str]:
    """The names without an ``id="ntkcond.NAME"`` anchor in ``html``."""
    ids = set(re.findall(r'id="(ntkcond\.[^"]+)"', html))
    return [name for name in names if f"ntkcond.{name}" not in ids]


def main(argv=None) -> int:
    import ntkcond

    args = sys.argv[1:] if argv is None else argv
    site = args[0] if args else "site"
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(site, "reference", "index.html"), encoding="utf-8") as f:
        missing = missing_entries(f.read(), ntkcond.__all__)
    notebooks = sorted(f[:-len(".ipynb")] for f in os.listdir(os.path.join(repo, "notebooks"))
                       if f.endswith(".ipynb"))
    absent = [n for n in notebooks if not os.path.exists(os.path.join(site, "notebooks", n, "index.html"))]
    if missing or absent:
        print(f"check_site: error: no reference entry for {missing}; no page for notebooks {absent}",
              file=sys.stderr)
        return 1
    print(f"docs: {len(ntkcond.__all__)} reference entries, one for every name in ntkcond.__all__; "
          f"{len(notebooks)} notebooks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
