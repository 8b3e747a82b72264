"""The label-noise split: the evaluation examples the fixed noise flipped are exactly the ones
the run trained on another A, the two parts average back to the run's own L_seq, and the kept
part's clocks are the plain ones on its curve."""

import json

import numpy as np
import pytest

from mi_plateau.checkpoints import RunError
from mi_plateau.cli import main
from mi_plateau.config import preset, with_overrides
from mi_plateau.replays.noise import flipped_rows, noise_split
from mi_plateau.summaries import tau, transition_width
from mi_plateau.task import make_eval_set, make_task


@pytest.fixture(scope="module")
def noisy_run(tmp_path_factory):
    from mi_plateau.train import train

    cfg = with_overrides(preset("tiny"), {"task.label_noise": 0.2, "task.label_noise_mode": "fixed", "max_steps": 300})
    return train(cfg, tmp_path_factory.mktemp("runs") / "noisy", progress=False)


def test_flipped_rows_are_the_examples_trained_on_another_A():
    cfg = with_overrides(preset("tiny"), {"task.label_noise": 0.25, "task.label_noise_mode": "fixed"})
    task = make_task(cfg.task)
    ev = make_eval_set(task, cfg.eval)
    flipped = flipped_rows(ev)
    want = [task.noisy_target_sel[g, s] != s for g, s in zip(ev.g, ev.s)]  # row by row
    assert flipped.tolist() == want
    # the tiny preset evaluates every group, so the flipped rows are every flipped example
    assert ev.n_groups == cfg.task.n_b and flipped.sum() == round(0.25 * cfg.task.D)
    assert not flipped_rows(make_eval_set(make_task(preset("tiny").task), cfg.eval)).any()  # no noise
    per_draw = with_overrides(cfg, {"task.label_noise_mode": "per_draw"})
    with pytest.raises(RunError, match="needs the fixed mode"):
        flipped_rows(make_eval_set(make_task(per_draw.task), per_draw.eval))


def test_split_averages_back_to_the_records_and_reads_the_plain_clocks(noisy_run):
    out = noise_split(noisy_run, every=2)
    recs = {r["step"]: r["metrics"] for r in noisy_run.records()}
    n, m = out["n_kept"], out["n_flipped"]
    assert m == round(0.2 * 48 * 4) and n + m == 48 * 4  # every group evaluated: every flipped example
    assert [r["step"] for r in out["rows"]] == noisy_run.steps()[::2]
    for r in out["rows"]:
        mixed = (n * r["L_seq_kept"] + m * r["L_seq_flipped"]) / (n + m)
        assert mixed == pytest.approx(r["L_seq_all"], rel=1e-9)
        assert r["L_seq_all"] == pytest.approx(recs[r["step"]]["L_seq"], rel=1e-4)  # every group scored
        assert r["Lc_all"] == pytest.approx(recs[r["step"]]["Lc"], rel=1e-4)
    steps, log_K = [r["step"] for r in out["rows"]], np.log(4)
    kept = [r["L_seq_kept"] for r in out["rows"]]
    assert out["kept"]["tau"] == tau(steps, kept, log_K)
    assert (out["kept"]["t_start"], out["kept"]["t_end"], out["kept"]["tau_width"]) == transition_width(
        steps, kept, log_K
    )
    assert out["kept"]["min_L_seq_over_log_K"] == pytest.approx(min(kept) / log_K)


def test_command_writes_json_and_refuses_bad_input_in_one_line(noisy_run, tmp_path, capsys):
    dest = tmp_path / "split.json"
    assert main(["noise-split", str(noisy_run.path), "--every", "5", "--out", str(dest)]) == 0
    doc = json.loads(dest.read_text())
    assert (
        doc["runs"][0]["every"] == 5
        and doc["command"] == f"mi-plateau noise-split {noisy_run.path} --every 5 --out {dest}"
    )
    assert doc["runs"][0]["scored"]["command"] == doc["command"] and doc["runs"][0]["n_flipped"] > 0
    # a written file is read back, its runs as they were scored, without scoring them again
    again = tmp_path / "again.json"
    assert main(["noise-split", str(dest), "--out", str(again)]) == 0
    assert json.loads(again.read_text())["runs"] == doc["runs"]
    (tmp_path / "bad.json").write_text('{"rows": []}')
    (tmp_path / "list.json").write_text("[1, 2]")
    capsys.readouterr()
    for bad, says in (("bad.json", "bad.json: no runs in it"), ("list.json", "list.json: no runs in it")):
        assert main(["noise-split", str(tmp_path / bad)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("mi-plateau noise-split: error:") and err.count("\n") == 1 and says in err, err
    assert main(["noise-split", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err == f"mi-plateau noise-split: error: {tmp_path / 'nowhere'}: no such run folder\n"
