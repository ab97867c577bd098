"""NeuroBench's 5-trial rule as written: the mean of the trials within 5 % of the reported
figure (the trial mean, or a figure reported earlier), the spread shown beside it."""

from __future__ import annotations

import json

import pytest

from hilbench.report.render import render
from hilbench.report.table import Cell, Column, Table
from hilbench.report.trials import (
    ReportedFileError,
    apply_trial_rule,
    check_trials,
    load_reported,
)

WIDE = [21.62, 24.38, 21.62, 24.38, 23.0]  # the old check flagged these (6 % from the mean)
SHIFTED = [21.9, 23.27, 23.27, 23.27, 23.27]  # mean 22.996: 5.005 % above 21.9


def test_trials_far_from_their_mean_pass_when_their_mean_is_within_5_percent():
    check = check_trials(WIDE, reported=22.6, reported_by="paper")
    assert check.mean == pytest.approx(23.0)
    assert check.deviation == pytest.approx(0.4 / 22.6)
    assert check.passed and check.ok
    assert check.spread == pytest.approx(1.38 / 23.0)  # shown beside, not instead
    assert "within 5 % of reported 22.6 (paper): 1.8 %" in check.note()
    assert check_trials(WIDE).passed  # against their own mean


def test_a_mean_just_past_5_percent_of_the_reported_figure_fails():
    check = check_trials(SHIFTED, reported=21.9, reported_by="paper")
    assert check.deviation == pytest.approx(1.096 / 21.9)  # 5.005 %
    assert not check.passed
    assert "FLAG 5 trial(s): mean 22.996 is 5.0 % from reported 21.9 (paper)" in check.note()
    # each trial lies within 5 % of the mean: the old check passed this set
    assert check.spread < 0.05


def test_one_trial_at_60_w_and_four_at_38_w_are_flagged_not_repeatable():
    check = check_trials([60.0, 38.0, 38.0, 38.0, 38.0])
    assert check.mean == pytest.approx(42.4)
    assert check.passed  # the reported figure is this mean
    assert check.repeatable is False and not check.ok
    assert "FLAG not repeatable" in check.note()
    # the first set's spread is within what a repeat of 5 trials keeps inside 5 %
    assert check_trials(WIDE).repeatable is True


def _table(values: list[float], simulated: bool = False) -> Table:
    table = Table("qubo.fixed_timeout", "t", [Column("solver", key=True), Column("power", "W")])
    table.add(Cell.of_text("sa"), Cell(sum(values) / len(values), 0.1, "W", prefix=False,
                                       trials=tuple(values), simulated=simulated))
    return table


def test_the_table_flags_the_cell_and_says_so_under_it():
    table = _table([60.0, 38.0, 38.0, 38.0, 38.0])
    apply_trial_rule(table)
    text = render([table], "text")
    assert "42.40 ± 0.10 [1]" in text
    assert "FLAG not repeatable" in " ".join(text.split())


def test_reported_figures_from_an_earlier_summary(tmp_path):
    earlier = tmp_path / "earlier.json"
    reported = _table([21.9])
    earlier.write_text(render([reported], "json"))
    figures = load_reported(earlier)
    assert figures.get("qubo.fixed_timeout", "sa", "power W") == 21.9
    table = _table(SHIFTED)
    apply_trial_rule(table, figures)
    words = " ".join(table.notes)
    assert "0 of 1 figure(s) within 5 %" in words
    assert "FLAG 5-trial rule: sa, power W: mean of 5 trial(s) 22.996 is 5.0 % from reported" \
        in words
    assert "FLAG" in table.rows[0].cells[1].note
    # the CSV of a summary serves as well
    as_csv = tmp_path / "earlier.csv"
    as_csv.write_text(render([reported], "csv"))
    assert load_reported(as_csv).figures == figures.figures
    ok = _table(WIDE)
    reported_ok = tmp_path / "ok.json"
    reported_ok.write_text(render([_table([22.6])], "json"))
    apply_trial_rule(ok, load_reported(reported_ok))
    assert "1 of 1 figure(s) within 5 %" in " ".join(ok.notes)


@pytest.mark.parametrize(("text", "message"), [
    ("{}", "not the JSON of `hilbench summary --format json`"),
    ("a,b\n1,2\n", "a CSV needs the columns column, row, table, value"),
    ("table,row,column,value\nt,r,c,abc\n", "line 2: value 'abc' is not a number"),
    (json.dumps({"tables": []}), "holds no reported figure"),
])
def test_a_bad_reported_file_is_named(tmp_path, text, message):
    path = tmp_path / "r.txt"
    path.write_text(text)
    with pytest.raises(ReportedFileError) as info:
        load_reported(path)
    assert str(path) in str(info.value) and message in str(info.value)
