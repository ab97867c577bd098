"""Escaping by construction (`hilbench.report.markup`): every HTML template autoescapes,
whatever its name; Markdown text renders as exactly that text; a link to a file can never be a
``javascript:`` URL."""

from __future__ import annotations

import html

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hilbench.report.markup import (
    CSP,
    MdSafe,
    href,
    html_environment,
    markdown_environment,
    md_code,
    md_text,
)
from hilbench.safe_paths import OutsideFolder
from tests.doors.hostile import PAYLOADS, hostile_texts, inert_problems, markdown_html

pytest.importorskip("jinja2")
TEXT = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)))


def _inline(markdown: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).renderInline(markdown)


@settings(max_examples=400)
@given(TEXT)
def test_markdown_text_renders_as_that_text_and_nothing_else(text: str) -> None:
    shown = _inline(md_text(text))
    assert "<" not in shown  # no element of any kind: no link, emphasis, code or raw HTML
    assert html.unescape(shown) == " ".join(text.splitlines())


@settings(max_examples=300)
@given(TEXT | st.sampled_from([" ", "  ", " a", "`", "`` a ``"]))
def test_a_code_span_holds_any_text(text: str) -> None:
    shown = _inline(md_code(text))
    flat = " ".join(text.splitlines())
    if not flat:
        assert shown == ""
        return
    assert shown.startswith("<code>") and shown.endswith("</code>")
    assert html.unescape(shown[len("<code>"):-len("</code>")]) == flat


@given(st.sampled_from(PAYLOADS) | hostile_texts())
def test_every_html_template_escapes_whatever_its_file_name(value: str) -> None:
    env = html_environment()
    for name in ("page.html.j2", "page.html", "page.j2", "fragment", "x.md"):
        template = env.from_string("<p title='{{ v }}'>{{ v }}</p>")
        template.name = name
        page = template.render(v=value)
        shown = html.escape(value, quote=True).replace("&#x27;", "&#39;").replace(
            "&quot;", "&#34;")  # markupsafe's spelling of the same entities
        assert page == f"<p title='{shown}'>{shown}</p>" and inert_problems(page) == []


def test_markdown_templates_escape_every_value_but_built_markdown() -> None:
    env = markdown_environment()
    page = env.from_string("# {{ a }}\n\n| {{ b }} | {{ c }} |\n\n{{ d }}\n").render(
        a=PAYLOADS[0], b="x | y", c=MdSafe("**built**"), d="[l](javascript:alert(1))")
    rendered = markdown_html(page)
    assert inert_problems(rendered) == []
    assert "<strong>built</strong>" in rendered and "x | y" in html.unescape(rendered)


@given(st.text(st.characters(blacklist_characters="\x00\\", blacklist_categories=("Cs",)),
               min_size=1))
def test_a_file_link_is_relative_and_never_a_scheme(path: str) -> None:
    try:
        link = href(path)
    except OutsideFolder:
        return
    assert ":" not in link and not link.startswith("/")
    assert all(c not in link for c in "\"'<>() \t\n")


def test_no_page_allows_a_script() -> None:
    directives = dict(d.strip().split(" ", 1) for d in CSP.split(";"))
    assert directives["script-src"] == "'none'" and directives["default-src"] == "'none'"
    assert directives["base-uri"] == "'none'"
