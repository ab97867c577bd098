"""A workload's own section of the report (``WorkloadPlugin.report_section``): the templates
render any plugin's lead tables, folded details and grids in both files, its strings escaped
like every stored value, and a campaign's tables a section stands for are left out there."""

from __future__ import annotations

from pathlib import Path

import pytest

from hilbench.report.document import CampaignSection, Report
from hilbench.report.sections import Grid, GridCell, WorkloadSection, split_tables
from hilbench.report.table import Cell, Column, Table
from tests.doors.hostile import PAYLOADS, inert_problems, markdown_html, raw_in

pytest.importorskip("jinja2")


def _table(key: str, title: str) -> Table:
    table = Table(key, title, [Column("metric", key=True, align="left"), Column("value")])
    table.add(Cell.of_text("m"), Cell.of_text("1"))
    return table


def _section(text: str) -> WorkloadSection:
    return WorkloadSection(
        lead_tables=[_table("kws.across", f"across {text}")], replaces=("kws.own",),
        detail_prefix="kws.detail/", detail_title=f"KWS {text}", detail_what=f"what {text}",
        grids=[Grid("kws.ratios", f"caption {text}", ["system", f"ratio {text}"], ["", "right"],
                    [[GridCell(f"sys {text}"), GridCell(f"{text}×", 2.5)]])])


def _report(section: WorkloadSection, tables: list[Table]) -> Report:
    campaign = CampaignSection(
        name="c", uid="u" * 32, status="success", started="s", stopped="e", config_hash="h",
        tables=tables, workflows=[], methodology=[], figures=[], runs_by_status={"success": 1},
        run_ids=[], versions=[], simulation=[])
    campaign.main_tables, campaign.details = split_tables(tables, [section])
    return Report(title="t", generated="g", store="s", systems=[None], campaigns=[campaign],
                  figures=[], sections=[section])


def test_a_campaigns_tables_split_into_printed_and_folded():
    tables = [_table("kws.own", "own"), _table("kws.detail/a", "a"), _table("other", "o")]
    main, details = split_tables(tables, [_section("x")])
    assert [t.key for t in main] == ["other"]
    assert [(d.title, [t.key for t in d.tables]) for d in details] == [("KWS x", ["kws.detail/a"])]
    assert split_tables(tables[2:], [_section("x")])[1] == []  # no detail without its tables


def test_a_plugins_section_is_rendered_in_both_files_every_string_escaped(tmp_path: Path):
    from hilbench.report.html import render_html, render_md

    text = " ".join(PAYLOADS)
    report = _report(_section(text), [_table("kws.own", "own"), _table("kws.detail/a", "a")])
    page = render_html(report, tmp_path)
    assert 'data-table="kws.ratios"' in page and 'data-value="2.5"' in page
    assert 'data-table="kws.across"' in page and 'data-table="kws.own"' not in page
    assert page.count("<details><summary>KWS ") == 1 and 'data-table="kws.detail/a"' in page
    assert raw_in(page, list(PAYLOADS)) == [] and inert_problems(page) == []
    md = render_md(report)
    assert "|---|---:|" in md and "(what " in md
    assert inert_problems(markdown_html(md)) == []
