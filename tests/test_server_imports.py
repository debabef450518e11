"""A replica's memory: the server and the labelling step load no table or statistics library
(#22: pandas, SciPy and PyArrow made an idle replica 216 MB against a 200 MB budget; they are
for the console's tables and the report, loaded when a maintainer's page first needs them)."""

import subprocess
import sys

TABLE_LIBRARIES = ("pandas", "scipy", "pyarrow")

# What a labelling replica imports before and while it serves annotators: the ASGI app (login,
# drafts, health, guard), the Submit and the labelling step's rules.
LABELLING_PATH = (
    "annotate.web.server",
    "annotate.labelling.step",
    "annotate.labelling.page",
    "annotate.labelling.drafts",
    "annotate.labelling.answers",
    "annotate.queue.assignment",
    "annotate.queue.gold",
    "annotate.queue.targets",
    "annotate.web.label_form",
    "annotate.web.identity",
    "annotate.web.proofs",
    "annotate.web.render",
    "annotate.labelling.earlier",
    "annotate.web.views.admin",
)


def loaded_after_importing(modules) -> list[str]:
    code = (
        "import importlib, sys\n"
        f"for name in {list(modules)!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(sorted(m for m in {TABLE_LIBRARIES!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return eval(done.stdout.strip().splitlines()[-1])  # a list literal we printed ourselves


def test_the_labelling_path_loads_no_table_library():
    assert loaded_after_importing(LABELLING_PATH) == []


def test_the_report_still_loads_them():
    """The check can fail: the report's modules do load pandas."""
    assert "pandas" in loaded_after_importing(["analysis.report.build"])


def test_the_server_parses_http_in_c():
    # uvicorn takes httptools when it is installed, else h11 in pure Python, which was about a
    # sixth of a draft's CPU (#22: a draft's CPU over a Submit's, at most 0.10).
    import uvicorn

    config = uvicorn.Config(lambda scope, receive, send: None)
    config.load()
    assert config.http_protocol_class.__module__ == "uvicorn.protocols.http.httptools_impl"
