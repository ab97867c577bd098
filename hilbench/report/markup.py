"""Every page and Markdown file hilbench writes is made here, escaped by construction.

HTML comes only from Jinja2 templates in an environment whose autoescape is on for every
template, whatever its file name: a value from a store, a campaign, a system file or an agent is
escaped unless it is :class:`markupsafe.Markup`, and the only Markup is what the code built from
escaped parts. Links to files go through :func:`href`, which percent-encodes a relative path (no
``javascript:`` or other scheme can come through it). The pages allow no script at all
(:data:`CSP`): report files carry it as a ``<meta http-equiv>``, `hilbench serve` as a header.

Markdown has no autoescape of its own, so its environment finalizes every ``{{ value }}`` with
:func:`md_text` (HTML's ``& < >`` as entities, Markdown's link, emphasis, code and table
characters backslash-escaped, line breaks as spaces) unless the value is :class:`MdSafe`, the
Markdown a function here built from escaped parts.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from hilbench.safe_paths import OutsideFolder, relative_parts

# No script of any kind; images from the page itself (serve) or embedded; inline styles only.
CSP = ("default-src 'none'; script-src 'none'; img-src 'self' data:; "
       "style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'")
CSP_HEADER = CSP + "; frame-ancestors 'none'"  # not honoured in a <meta>, so only the header

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~<>&])")
_MD_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


class MdSafe(str):
    """Markdown built from escaped parts: the Markdown environment writes it as it is."""


def md_text(value: Any) -> str:
    """``value`` as Markdown text that renders as that text and nothing else: no HTML element,
    no link, image, emphasis, code span or table cell boundary of its own."""
    if isinstance(value, MdSafe):
        return value
    text = " ".join(str(value).splitlines()) if value is not None else ""

    def one(match: re.Match[str]) -> str:
        char = match.group(1)
        return _MD_ENTITIES.get(char, "\\" + char)

    return _MD_SPECIAL.sub(one, text)


def md_code(value: Any) -> MdSafe:
    """``value`` as a Markdown code span: fenced by one backtick more than its longest run, so
    nothing in it ends the span (and nothing in a code span is HTML)."""
    text = " ".join(str(value).splitlines())
    if not text:
        return MdSafe("")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    # a span drops one space at each end when both ends have one: pad so none of ours goes
    pad = " " if text.strip(" ") and (text[0] in "` " or text[-1] in "` ") else ""
    return MdSafe(f"{fence}{pad}{text}{pad}{fence}")


def href(path: str) -> str:
    """A link to a file of the page's own folder: a relative path, percent-encoded (``:`` too,
    so it can never be read as ``javascript:`` or any other scheme). Refuses ``..`` and absolute
    paths (:class:`~hilbench.safe_paths.OutsideFolder`)."""
    relative_parts(path)  # the same rule as every file hilbench writes or reads
    return quote(path, safe="/")


def segment(text: str) -> str:
    """One path segment of a URL (a campaign uid in a link): every reserved character
    percent-encoded, ``/`` included."""
    return quote(str(text), safe="")


def md_path(path: str) -> MdSafe:
    """A relative file link as a Markdown link destination: :func:`href`'s percent-encoding
    leaves no space, parenthesis or angle bracket that could end or change the link."""
    return MdSafe(href(path))


def _md_finalize(value: Any) -> Any:
    return value if isinstance(value, MdSafe) else md_text(value)


def _base(**kw: Any) -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("hilbench.report", "templates"),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        **kw,
    )


def html_environment() -> Any:
    """Templates rendered to HTML: autoescape on for every template, :func:`href` and
    :func:`segment` as filters, the CSP as a global."""
    env = _base(autoescape=True)
    env.filters["href"] = href
    env.filters["segment"] = segment
    env.globals["csp"] = CSP
    return env


def markdown_environment() -> Any:
    """Templates rendered to Markdown: every value through :func:`md_text` unless MdSafe."""
    env = _base(autoescape=False, finalize=_md_finalize)
    env.filters["md_code"] = md_code
    env.filters["md_path"] = md_path
    return env


__all__ = ["CSP", "CSP_HEADER", "MdSafe", "OutsideFolder", "href", "html_environment",
           "markdown_environment", "md_code", "md_path", "md_text", "segment"]
