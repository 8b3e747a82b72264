"""``mi-plateau selfcheck`` on the CPU: every check passes on a short demo, and a planted
difference between the devices' curves fails the check that compares them (exit 1)."""

import pytest

from mi_plateau import selfcheck as sc


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return sc.selfcheck("cpu", steps=30, m=2, folder=str(tmp_path_factory.mktemp("sc")))


def test_every_check_passes_on_the_cpu(result):
    checks = {c.name.split(":")[0]: c for c in result["checks"]}
    assert all(c.ok for c in result["checks"]), [c.line() for c in result["checks"] if not c.ok]
    assert len([c for c in result["checks"] if c.tol is not None]) == 5
    assert checks["batched member 0 of 2 against its single run on cpu"].value < 1e-4
    assert result["precision"].startswith("auto = ")


def test_a_curve_difference_fails_its_check_and_the_command(tmp_path, monkeypatch, capsys):
    from mi_plateau.cli import main

    real = sc.curve_diff
    monkeypatch.setattr(sc, "curve_diff", lambda a, b: 1.0 if a.name == "cpu" else real(a, b))
    assert main(["selfcheck", "--device", "cpu", "--steps", "20", "--runs", "2", "--keep", str(tmp_path / "k")]) == 1
    out = capsys.readouterr().out
    assert "FAIL demo, 20 steps, fp32 curves" in out and "max |diff| 1.0e+00" in out
