"""Issue 42, item 1: the README's tour and the tutorial (docs/tutorial.md) match the pages word for
word. Every label they quote in *italics* or **bold** (a button, tab, section, field or module, as
a user reads it on the page) is a label the pages show: text of a template's element, or a string
of the page script or of a module's declaration (palette, parameter form). A label named as a tab
("in its *Module* tab") is one of the designer's tabs. The documents are read as the production
recipe's test reads its own (tests/production.py): the section itself, not a copy of it."""
import html
import re

from tests.conftest import ROOT

SOURCES = [*sorted((ROOT / "templates").rglob("*.html")), *sorted((ROOT / "static" / "js").rglob("*.js")),
           *sorted((ROOT / "modules").rglob("*.py"))]
EMPHASIS = re.compile(r"\*\*([^*]+?)\*\*|(?<![*\w])\*([^*\s][^*]*?)\*(?![*\w])")  # over a line break too
TABS = re.compile(r'role="tab"[^>]*>([^<]+)<')


def tour() -> str:
    readme = (ROOT / "README.md").read_text()
    assert "## A five-minute tour" in readme, "README.md has no section '## A five-minute tour'"
    return readme.split("## A five-minute tour", 1)[1].split("\n## ", 1)[0]


def tutorial() -> str:
    return re.sub(r"`[^`]*`", "", (ROOT / "docs" / "tutorial.md").read_text())  # code is not a label


def quoted(text: str) -> list[str]:
    return [" ".join((bold or italic).split()) for bold, italic in EMPHASIS.findall(text)]


def page_text() -> str:
    return "\n".join(html.unescape(path.read_text()) for path in SOURCES)


def shown(label: str, text: str) -> bool:
    """The label whole, as an element's text (`>Label<`) or a string (`'Label'`, `"Label"`, or the
    start of a template literal: `+ New parameter ${name}`)."""
    return re.search(r"""(?:>\s*|['"`])""" + re.escape(label) + r"""(?:\s*<|['"`]|:? \$\{)""", text) is not None


def test_the_checks_read_what_they_should():
    text = page_text()
    assert shown("Create pipeline", text) and shown("Outputs + logs", text) and shown("+ New parameter", text)
    assert not shown("New pipeline", text) and not shown("Apply best values", text)  # (the button says "... to pipeline")
    assert len(quoted(tour())) >= 15 and len(quoted(tutorial())) >= 25


def test_every_label_the_tour_and_the_tutorial_quote_is_on_the_pages():
    text = page_text()
    for name, doc in (("README.md's tour", tour()), ("docs/tutorial.md", tutorial())):
        missing = sorted({label for label in quoted(doc) if not shown(label, text)})
        assert not missing, (f"{name} quotes labels no page shows (templates/, static/js/, modules/): {missing}; "
                             "write each as the page does, or leave it out of *italics* and **bold** if it is no label")


def test_a_tab_the_documents_name_is_one_of_the_designers_tabs():
    tabs = {" ".join(t.split()) for t in TABS.findall((ROOT / "templates" / "pipelines" / "designer.html").read_text())}
    assert {"Module", "Outputs + logs", "Metrics", "Visualize"} <= tabs
    for name, doc in (("README.md's tour", tour()), ("docs/tutorial.md", tutorial())):
        said = re.findall(r"\*([^*\n]+)\* tab\b", doc) + re.findall(r"\btab \*([^*\n]+)\*", doc)
        wrong = sorted(set(said) - tabs)
        assert not wrong, f"{name} names {wrong} as tab(s): the designer's tabs are {sorted(tabs)}"
