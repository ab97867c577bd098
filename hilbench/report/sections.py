"""A workload's own section of the report's results (``WorkloadPlugin.report_section``): what
it prints across campaigns, which of each campaign's tables it replaces or folds away, and
small grids of its own (a ratio table). The templates render every section the same way, every
value escaped; the section's builder, ``function(sources, reported, reference) ->
WorkloadSection | None``, is called once per report with every campaign's
:class:`hilbench.report.figures.source.Source`."""

from __future__ import annotations

from dataclasses import dataclass, field

from hilbench.report.table import Table


@dataclass(frozen=True)
class GridCell:
    text: str
    value: float | None = None  # the figure a reader's tools read (HTML data-value)


@dataclass
class Grid:
    """A small table printed after the figures across campaigns."""

    key: str  # the HTML table's data-table
    caption: str
    headings: list[str]
    aligns: list[str]  # per column: "right" or ""
    rows: list[list[GridCell]]


@dataclass
class WorkloadSection:
    """What one workload adds to the report's results."""

    # Printed at the head of the results, once for every campaign.
    lead_tables: list[Table] = field(default_factory=list)
    # Keys of campaign tables the lead tables stand for: left out of each campaign's tables.
    replaces: tuple[str, ...] = ()
    # A campaign's tables whose key starts with this go in a folded detail under its tables,
    # headed "<detail_title>: <detail_what>" ("(<detail_what>):" in Markdown).
    detail_prefix: str | None = None
    detail_title: str = ""
    detail_what: str = ""
    grids: list[Grid] = field(default_factory=list)

    def detail(self, key: str) -> bool:
        return self.detail_prefix is not None and key.startswith(self.detail_prefix)


@dataclass
class Detail:
    """One section's folded tables in one campaign."""

    title: str
    what: str
    tables: list[Table]


def split_tables(tables: list[Table], sections: list[WorkloadSection]
                 ) -> tuple[list[Table], list[Detail]]:
    """A campaign's tables: those printed, and each section's folded detail (where it has
    tables)."""
    main = [t for t in tables if not any(s.detail(t.key) or t.key in s.replaces
                                         for s in sections)]
    details = [Detail(s.detail_title, s.detail_what, found) for s in sections
               if (found := [t for t in tables if s.detail(t.key)])]
    return main, details
