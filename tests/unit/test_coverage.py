"""The coverage table that chooses Z (docs/reproduction/coverage.md), on hand-built crossings."""

from mi_plateau.crossings import Crossing
from mi_plateau.replays.coverage import coverage_table, covers


def _row(run: str, exact: int, **intervals) -> dict:
    """A settled crossing of ``run`` with, per Z ("1.5", "2"), its interval (lo, hi)."""
    row = {"run": run, "crossing": "tau", "exact": exact, "settled": True, "estimate": exact}
    for z in ("1.5", "2", "2.5", "3"):
        lo, hi = intervals.get(f"z{z.replace('.', '_')}", (exact - 100, exact + 100))
        row |= {f"lo_{z}": lo, f"hi_{z}": hi, f"covers_{z}": lo <= exact <= hi}
    return row


def test_the_share_covered_its_run_resampled_interval_and_the_smallest_z_at_95_percent():
    rows = [
        _row("a", 1000, z1_5=(900, 1050)),
        _row("a", 2000, z1_5=(1950, 2050)),
        _row("b", 1500, z1_5=(1400, 1450), z2=(1400, 1550)),  # missed at Z = 1.5 only
        _row("b", 3000, z1_5=(2900, 3100)),
        {"run": "c", "crossing": "tau", "settled": False},  # unsettled: left out
    ]
    table = {r["Z"]: r for r in coverage_table(rows, n_boot=400)}
    z15, z2 = table[1.5], table[2.0]
    assert (z15["runs"], z15["crossings"], z15["covered"], z15["coverage"]) == (2, 4, 3, 0.75)
    # whole runs resampled: a+a covers 4 of 4, a+b 3 of 4, b+b 2 of 4
    assert (z15["coverage_lo"], z15["coverage_hi"]) == (0.5, 1.0)
    assert z15["mean_width_steps"] == (150 + 100 + 50 + 200) / 4
    assert (z2["coverage"], z2["coverage_lo"], z2["coverage_hi"]) == (1.0, 1.0, 1.0)
    assert [z for z, r in table.items() if r["chosen"]] == [2.0]


def test_an_interval_covers_the_exact_step_or_leaves_a_missing_crossing_open():
    assert covers(Crossing(1000, 950, 1050, False), 1000)
    assert not covers(Crossing(1000, 950, 1050, False), 1075)
    assert covers(Crossing(None, 950, None, False), None)  # no crossing, interval open
    assert not covers(Crossing(1000, 950, 1050, False), None)


def test_one_run_per_training_the_one_evaluated_in_its_training_precision():
    from mi_plateau.replays.coverage import distinct_trainings

    def rows(run, weights, precision, eval_precision):
        r = _row(run, 1000) | {"weights": weights, "precision": precision, "eval_precision": eval_precision}
        return [r, dict(r, crossing="t_end")]

    every = (
        rows("old/K30", "aa", "bf16", "fp32")  # the same training evaluated in fp32 by older code
        + rows("p57/K30", "aa", "bf16", "bf16")
        + rows("a/K36", "bb", "bf16", "bf16")
        + rows("b/K36", "bb", "bf16", "bf16")  # a second, identical evaluation
        + rows("K10", "cc", "fp32", "fp32")
        + [_row("demo", 500)]  # logged before identities: kept
    )
    kept, dropped = distinct_trainings(every)
    assert dropped == ["b/K36", "old/K30"]
    assert sorted({r["run"] for r in kept}) == ["K10", "a/K36", "demo", "p57/K30"] and len(kept) == 7


def test_the_run_resampled_interval_leaves_as_many_draws_below_as_above():
    """The percentile bootstrap's ends are the 2.5% and 97.5% points of the draws: with shares
    0/4, ..., 4/4 possible, a lone missing run pulls the lower end down and never the upper."""
    rows = [_row(r, 1000) for r in "abcdefghij"] + [_row("k", 1000, z1_5=(0, 10))]
    z15 = coverage_table(rows, n_boot=1000)[0]
    assert z15["coverage"] == 10 / 11 and z15["coverage_hi"] == 1.0 and z15["coverage_lo"] < 10 / 11
