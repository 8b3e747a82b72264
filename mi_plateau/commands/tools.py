"""The study commands: each runs one study beside the pipeline's passes and writes one JSON
artifact that names the command line which wrote it. ``linear-control`` (Table 12's linear
network, ``control.linear``), ``sampled-pairs`` (a condition's seeds under the original's
estimator, ``replays.sampled``), ``llc`` (the learning coefficient, ``estimators.llc``), ``noise-split``
(label-noise runs on the examples their noise left alone, ``replays.noise``) and
``estimator-spread`` (L_seq's spread over the evaluation set, ``bench.spread``).

Each checks its --out file and its inputs before any work, then calls its module's function;
the parsers are in ``tool_args``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def given(args, *names: str) -> dict[str, Any]:
    """The options among ``names`` that the command line set: the parsers' defaults are None,
    so the study's own function keeps its defaults."""
    return {n: getattr(args, n) for n in names if getattr(args, n) is not None}


def command_line(argv: Sequence[str]) -> str:
    """What an artifact records as its origin: ``mi-plateau`` and its arguments."""
    return " ".join(["mi-plateau", *argv])


def checked_run(path: str):
    """The run folder at ``path``, its manifest read: RunError naming it where there is none."""
    from ..checkpoints import Run

    run = Run(path)
    run.manifest()
    return run


def checked_sources(sources: Sequence[str]) -> None:
    """Every input before any work: a JSON file that exists, or a run folder (``checked_run``),
    so that a typo in the last one does not cost the scoring of the others."""
    from ..checkpoints import RunError

    for src in sources:
        if not src.endswith(".json"):
            checked_run(src)
        elif not Path(src).is_file():
            raise RunError(f"{src}: no such file")


def cmd_linear_control(args, argv: Sequence[str] = ()) -> int:
    from ..checkpoints import atomic_write_json
    from ..checkpoints.files import writable_out

    writable_out(args.out)
    from ..control.linear import control_record

    doc, walls = control_record(**given(args, "Ks", "steps", "eval_every"), command=command_line(argv))
    atomic_write_json(Path(args.out), doc)
    for row, wall in zip(doc["table12"], walls):
        print(
            f"K={row['K']:>2}  step {row['steps']}  candidate loss {row['candidate_loss']:.4f} nats  "
            f"/ log K = {row['ratio_to_logK']:.4f}  cand_acc {row['cand_acc']:.4f}  {row['verdict']}  ({wall:.1f} s); "
            f"least-squares limit {row['limit_candidate_loss']:.4f} nats "
            f"/ log K = {row['limit_candidate_loss_over_logK']:.4f}"
        )
    print(f"wrote {args.out}")
    return 0


def cmd_sampled_pairs(args, argv: Sequence[str] = ()) -> int:
    from ..checkpoints.files import emit_json, provenance, writable_out

    writable_out(args.out)
    checked_sources(args.runs)
    from ..replays.sampled import condition_from

    condition = condition_from(args.runs, **given(args, "n_sample", "draws", "every", "seed"))
    emit_json({"condition": condition, **provenance("mi-plateau", list(argv))}, args.out)
    return 0


def cmd_llc(args, argv: Sequence[str] = ()) -> int:
    from ..checkpoints.files import writable_out

    curve = given(args, "n", "upto", "lr", "localization")
    if args.calibrate and curve:  # the calibration sweeps its own grid of eps at two checkpoints
        raise ValueError(f"--{next(iter(curve))}: does not apply with --calibrate (its own grid)")
    writable_out(args.out)
    run = checked_run(args.run)
    from ..estimators.llc import record_calibration, record_curve, require_devinterp

    require_devinterp()
    if args.calibrate:
        doc = record_calibration(run, args.out, progress=True)
    else:
        doc = record_curve(run, args.out, **curve, progress=True)
    print(f"wrote {args.out} ({len(doc['rows'])} rows)")
    return 0


def cmd_noise_split(args, argv: Sequence[str] = ()) -> int:
    from ..checkpoints.files import emit_json, provenance, writable_out

    writable_out(args.out)
    checked_sources(args.runs)
    from ..replays.noise import noise_splits

    stamp = provenance("mi-plateau", list(argv))
    runs = noise_splits(args.runs, **given(args, "every"), stamp=stamp, progress=sys.stderr.isatty())
    emit_json({"runs": runs, **stamp}, args.out)
    return 0


def cmd_estimator_spread(args, argv: Sequence[str] = ()) -> int:
    from ..checkpoints.files import emit_json, provenance, writable_out

    writable_out(args.out)
    checked_run(args.run)
    from ..bench.spread import run_spread

    out = run_spread(args.run, **given(args, "every", "subset", "rows"))
    emit_json(out | provenance("mi-plateau", list(argv)), args.out)
    return 0
