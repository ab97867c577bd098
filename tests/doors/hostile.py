"""Hostile input for the doors tests: markup, quotes and ``javascript:`` URLs meant to run in a
page, names made of ``../`` steps, a system file with one in every field; and the checks that a
page, a Markdown file or a folder let none of it through."""

from __future__ import annotations

import json
import os
from html.parser import HTMLParser
from pathlib import Path

from hypothesis import strategies as st

# Each would change the page if it ran: its title, or a data-pwned attribute on an element.
SCRIPT = "<script>document.title='PWNED'</script>"
IMG = "<img src=x onerror=\"document.body.setAttribute('data-pwned','img')\">"
SVG = "\"><svg onload=\"document.body.setAttribute('data-pwned','svg')\">"
FRAME = "<iframe srcdoc=\"<script>parent.document.title='PWNED'</script>\"></iframe>"
LINK = "javascript:document.body.setAttribute('data-pwned','link')"
MD_LINK = "[click](javascript:document.title='PWNED')"
COMMENT = "--><script>document.title='PWNED'</script><!--"
PAYLOADS = (SCRIPT, IMG, SVG, FRAME, LINK, MD_LINK, COMMENT, "'><b>bold</b>", "</title><h1>x",
            "&lt;script&gt;", "<a href=\"javascript:alert(1)\">x</a>", "`<code>` | *em* _u_",
            "<style>body{display:none}</style>", "<base href=\"http://evil.example/\">")
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "data", "poster",
                  "srcdoc", "background"}
# What a report or page of ours holds; an element of any other kind came from input.
ELEMENTS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "b", "br",
            "span", "div", "dl", "dt", "dd", "figure", "img", "figcaption", "a", "ol", "ul", "li",
            "table", "caption", "thead", "tbody", "tr", "th", "td", "sup", "details", "summary",
            "code", "pre", "em", "strong", "blockquote", "hr"}

# In an SVG figure (matplotlib's elements are many): what could run or lead anywhere.
ACTIVE = {"script", "iframe", "foreignobject", "object", "embed", "a", "animate", "set", "base",
          "handler", "listener"}

# The system fields a user writes freely (the others are a fixed choice or a date).
SYSTEM_TEXT = ("name", "organisation", "architecture", "algorithm", "description", "contact",
               "url")
POWER_TEXT = ("instrument", "notes")

_TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=6)
_TAG = st.from_regex(r"<[a-z]{1,6}( on[a-z]{1,5}=(\"[^\"<]{0,6}\"|'[^'<]{0,6}'))?>",
                     fullmatch=True)


def hostile_texts() -> st.SearchStrategy[str]:
    """Text around markup, a quote or a ``javascript:`` URL: every string it makes holds one
    of ``< > & " '``, so escaping always changes it and its raw form must not appear."""
    core = st.one_of(st.sampled_from(PAYLOADS), _TAG,
                     st.sampled_from(["javascript:alert('x')", "\"", "'", "&", "<", ">"]))
    return st.builds(lambda a, b, c: a + b + c, _TEXT, core, _TEXT)


def system_toml(texts: dict[str, str]) -> str:
    """A valid system file whose free-text fields hold ``texts`` (keys: :data:`SYSTEM_TEXT`,
    ``power.`` + :data:`POWER_TEXT`, ``domain``, ``software``, ``version``)."""
    def q(value: str) -> str:
        # a TOML basic string too, once DEL is escaped (JSON leaves it raw; TOML refuses it)
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")

    lines = ["[system]"] + [f"{k} = {q(texts[k])}" for k in SYSTEM_TEXT]
    lines += ['date = 2026-01-15', 'availability = "Available"', 'configuration = "performance"',
              "", "[system.power]", 'category = "external analyzer tap"']
    lines += [f"{k} = {q(texts['power.' + k])}" for k in POWER_TEXT]
    lines += [f"included_domains = [{q(texts['domain'])}]",
              f"omitted_domains = [{q(texts['domain'] + ' omitted')}]",
              "", "[[system.software]]", f"name = {q(texts['software'])}",
              f"version = {q(texts['version'])}", ""]
    return "\n".join(lines)


def system_keys() -> list[str]:
    return [*SYSTEM_TEXT, *(f"power.{k}" for k in POWER_TEXT), "domain", "software", "version"]


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {k: v or "" for k, v in attrs}))


def elements(page: str) -> list[tuple[str, dict[str, str]]]:
    parser = _Elements()
    parser.feed(page)
    parser.close()
    return parser.found


def inert_problems(page: str, allowed: set[str] | None = ELEMENTS) -> list[str]:
    """What in ``page`` could run or was not made by us: a script, frame or other element we
    never write (``allowed``; None: an SVG, where only :data:`ACTIVE` ones are refused), an
    event-handler attribute, a ``javascript:`` URL, a ``data-pwned`` mark."""
    problems = []
    for tag, attrs in elements(page):
        if (tag in ACTIVE) if allowed is None else (tag not in allowed):
            problems.append(f"<{tag}> element")
        for name, value in attrs.items():
            if name.startswith("on") or name == "data-pwned":
                problems.append(f"<{tag} {name}=...>")
            url = "".join(value.split()).lower()  # browsers drop whitespace in a scheme
            if name in URL_ATTRIBUTES and url.startswith(("javascript:", "vbscript:")):
                problems.append(f"<{tag} {name}={value!r}>")
    return problems


def raw_in(text: str, strings: list[str], significant: str = "<>\"'") -> list[str]:
    """The ``strings`` that appear in ``text`` as they are, of those holding a character of
    ``significant``: HTML escaping replaces each of ``< > " '`` by an entity not starting with
    it, so an escaped string never appears (``&`` becomes ``&amp;``, which a string ending in
    ``&`` is a prefix of); in XML text only ``<`` must be escaped."""
    return [s for s in strings if any(c in s for c in significant) and s in text]


def markdown_html(markdown: str) -> str:
    """``markdown`` as a renderer that passes raw HTML through would show it (CommonMark,
    markdown-it with ``html`` on)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).render(markdown)


def tree(folder: Path) -> set[Path]:
    """Every file and folder under ``folder`` (links not followed)."""
    found = set()
    for root, dirs, files in os.walk(folder):
        found.update(Path(root) / n for n in dirs + files)
    return found
