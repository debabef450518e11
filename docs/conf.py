"""The documentation site: Sphinx with MyST-Parser (the pages stay Markdown, readable as they
are in the repository) and the Furo theme. Built strictly by the README's test command:
    sphinx-build -W --keep-going -n -q -b html docs docs/_build/html
"""

project = "prefpair-annotate"
author = "prefpair-annotate contributors"
copyright = "prefpair-annotate contributors, GPL-3.0-or-later"

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "reference/examples", ".venv"]

myst_heading_anchors = 4  # links such as deployment.md#serving-under-a-path-prefix resolve
myst_enable_extensions = ["colon_fence"]
suppress_warnings = ["myst.header"]  # a page may start its sections at any level

html_theme = "furo"
html_title = "prefpair-annotate"
html_static_path: list[str] = []
