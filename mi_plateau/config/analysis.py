"""The analysis section: what the passes compute over a run's checkpoints and how Tables 6 and 9,
the routing summary and Figure 3 read them (``AnalysisConfig``).

Each field is declared once, with ``setting`` as the run config's are: its help, its bounds and,
where the command line sets it, its flag of ``mi-plateau analyze`` (``commands.options.add_settings``
builds the flags from these fields). A run's config.json does not hold it: the same checkpoints
are analysed under many settings, and the pass cache keys the settings that change its rows
(``passes.analyze.PassConfig.key``). ``PassConfig`` is this section with the head ablation checked
against the registry and that key. Standard library only: the command line imports it at start-up."""

from __future__ import annotations

from dataclasses import dataclass

from .settings import NON_NEGATIVE, POSITIVE, SEED, Bounds, check_fields, setting

FRACTION_OF_TAU = Bounds(gt=0, text="fractions of tau must be > 0")


@dataclass(frozen=True)
class AnalysisConfig:
    """The pass settings (docs/analyses.md): the cheap passes run at every checkpoint, the per-head
    passes at ``max_checkpoints`` points over [0, ``head_span`` tau] and the checkpoints the
    tables read (``passes.analyze.head_checkpoints``)."""

    shifts: tuple[int, ...] = setting(
        (1,), help="selector replacements k -> k+s mod K to average, comma-separated", flag="--shifts"
    )
    head_ablation: str = setting(
        "zero", help="the registered head ablation the per-head passes run (interventions; --ablation, --mean)"
    )
    max_checkpoints: int = setting(
        21,
        help="per-head passes at this many checkpoints, evenly spaced over [0, 2 tau] (the end: head_span)",
        bounds=POSITIVE,
        flag="--max-checkpoints",
    )
    head_span: float = setting(2.0, help="the per-head passes' grid ends at this multiple of tau", bounds=Bounds(gt=0))
    table6_fracs: tuple[float, ...] = setting(
        (0.25, 0.5, 1.0, 1.5), help="Table 6's rows: fractions of tau", bounds=FRACTION_OF_TAU
    )
    phase_fracs: tuple[float, float, float] = setting(
        (0.25, 1.0, 2.0), help="Pre, Mid and Post of Table 9: fractions of tau", bounds=FRACTION_OF_TAU
    )
    min_gap: float = setting(
        0.05, help="the swap gap (nats) below which a head's causal share is NaN", bounds=NON_NEGATIVE
    )
    n_boot: int = setting(
        1000, help="bootstrap resamples over groups for the tables' intervals (0: none)", bounds=NON_NEGATIVE
    )
    boot_seed: int = setting(0, help="seed of those resamples", bounds=SEED)
    delta: int = setting(
        200,
        help="Figure 3(b)'s displacement grid (steps; a multiple of the checkpoint spacing)",
        bounds=POSITIVE,
    )

    def __post_init__(self):
        check_fields(self, "analysis")


ANALYSIS = {"analysis": AnalysisConfig}  # the section by name, as ``settings`` reads sections
