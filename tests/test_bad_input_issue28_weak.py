"""Regression tests for issue 28's remaining WEAK cases: ``reproduce`` configurations checked before
anything is written (ranges, finiteness, cross-field rules, S <= clients), complex features in a
user's data, the prox's lam (a bool, near the float maximum, an uncertified prox naming it), a full
disk under ``check --save-counterexamples``, zero-client objectives, and the report's cosmetics.

Each row of a table: the input, and a message fragment naming the argument, condition and value.
"""

from __future__ import annotations

import errno
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import moreau as mo
from moreau._cli import main
from moreau.analysis.api import Sides, Statement

TESTS = Path(__file__).resolve().parent


def _one_line_exit_2(argv, capsys, fragment):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and len(err.splitlines()) == 1 and "internal error" not in err, err
    return err


# -- 1. reproduce: refused before anything is written -------------------------------------------

CONFIG_CASES = [
    ("pfedme-prop1", "mu=-1", "--set mu=-1: 'mu' must be in (0, 1e+150] (got -1.0)"),
    ("pfedme-prop1", "L=0", "--set L=0: 'L' must be in (0, 1e+150] (got 0.0)"),
    (
        "pfedme-prop1",
        "mu=2",
        "pfedme-prop1: mu must be <= L (the convex panel's spectrum is [mu, L]; got mu = 2, L = 1)",
    ),
    ("pfedme-prop1", "mu=NaN", "--set mu=NaN: 'mu' expects a finite number (got NaN)"),
    ("pfedme-prop1", "L=Infinity", "--set L=Infinity: 'L' expects a finite number (got Infinity)"),
    ("pfedme-prop1", "mu=1e400", "'mu' expects a finite number (got Infinity)"),
    ("pfedme-prop1", "mu=1" + "0" * 400, "'mu' expects a finite number (got 1000"),
    ("pfedme-prop1", "lam_convex=[-1,0]", "'lam_convex[0]' must be in (0, 1e+150] (got -1.0)"),
    ("pfedme-prop1", "lam_weak=[0.5,2]", "every lam_weak must be > L = 1 (the envelope of an f with"),
    ("pfedme-prop1", "d=100000", "--set d=100000: 'd' must be in [2, 2000] (got 100000)"),
    ("pfedme-prop1", "d=1", "--set d=1: 'd' must be in [2, 2000] (got 1)"),
    (
        "compare",
        "fedavg.eta=-1",
        "--set fedavg.eta=-1: 'fedavg.eta' must be > 0 (got -1.0): FedAvg's step size",
    ),
    ("compare", "pfedme.lam=0", "--set pfedme.lam=0: 'pfedme.lam' must be > 0 (got 0.0)"),
    ("compare", 'pfedme={"lam": -3}', "'pfedme.lam' must be > 0 (got -3.0)"),
    ("compare", "S=500", "compare: S = 500 clients per round exceeds the 20 clients of the example data set"),
    ("pfedme-synthetic", "S=500", "pfedme-synthetic: S = 500 clients per round exceeds n_clients = 100"),
    ("pfedme-digits", "S=21", "pfedme-digits: S = 21 clients per round exceeds n_clients = 20"),
    ("pfedme-official-conventions", "S=500", "S = 500 clients per round exceeds n_clients = 100"),
    ("pfedme-synthetic", "tuned.lam=0", "'tuned.lam' must be > 0 (got 0.0)"),
]


@pytest.mark.parametrize(
    "name, setting, message", CONFIG_CASES, ids=[f"{n}:{s[:20]}" for n, s, _ in CONFIG_CASES]
)
def test_a_configuration_that_cannot_run_is_refused_before_anything_is_written(
    tmp_path, capsys, name, setting, message
):
    out = tmp_path / "out"
    _one_line_exit_2(["reproduce", name, "--quick", "--out", str(out), "--set", setting], capsys, message)
    assert not out.exists()


def test_every_experiments_defaults_pass_its_ranges_and_rules():
    from moreau.experiments._config import resolve
    from moreau.experiments.registry import experiments

    for name, exp in experiments().items():
        for quick in (True, False):
            try:
                resolve(exp, quick, None)
            except ValueError as exc:  # only the exact experiments refuse --trials; never the ranges
                assert "--trials does not apply" in str(exc), (name, exc)


def test_toml_nan_and_a_binary_config_file_are_refused_naming_them(tmp_path, capsys):
    toml = tmp_path / "c.toml"
    toml.write_text("mu = nan\n")
    _one_line_exit_2(
        ["reproduce", "pfedme-prop1", "--out", str(tmp_path / "o"), "--config", str(toml)],
        capsys,
        f"--config {toml}: 'mu' expects a finite number (got NaN)",
    )
    binary = tmp_path / "c.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    _one_line_exit_2(
        ["reproduce", "pfedme-prop1", "--out", str(tmp_path / "o"), "--config", str(binary)],
        capsys,
        f"--config {binary}: not",
    )
    assert not (tmp_path / "o").exists()


@pytest.mark.reproduce
def test_a_directory_without_a_finished_point_is_not_a_run(tmp_path, capsys):
    """A run that failed before its first point (its bookkeeping only) does not hold the directory;
    a run with a finished point still does."""
    out = tmp_path / "out"
    argv = ["reproduce", "pfedme-prop1", "--quick", "--workers", "1", "--out", str(out)]
    assert main([*argv, "--set", "d=3"]) == 0
    for f in (out / "points").glob("*.json"):
        f.unlink()
    (out / "manifest.json").unlink()
    assert main([*argv, "--set", "d=4"]) == 0  # takes the directory
    held = json.loads((out / "run.json").read_text())
    assert held["arguments"]["params"]["d"] == 4
    assert json.loads((out / "manifest.json").read_text())["sessions"] == 1
    capsys.readouterr()
    _one_line_exit_2(
        [*argv, "--set", "d=5"], capsys, "holds a run with other arguments (differs in: params.d)"
    )


# -- 2. a user's data: complex features ----------------------------------------------------------


def test_complex_features_are_refused_naming_the_file_and_array(tmp_path):
    from moreau.experiments import _userdata

    path = tmp_path / "clients.npz"
    X = np.ones((4, 2)) + 1j
    np.savez(path, X_0=X.real, y_0=np.array([0, 1, 0, 1]), X_1=X, y_1=np.array([0, 1, 0, 1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning: refused before any cast
        with pytest.raises(
            ValueError, match=r"--data .*clients.npz: X_1 must be real numbers \(got complex"
        ) as e:
            _userdata.load(path)
    assert len(str(e.value).splitlines()) == 1


# -- 3. the prox's lam ---------------------------------------------------------------------------

RNG = np.random.default_rng(2028)
LOG = mo.Logistic(RNG.standard_normal((2, 5, 3)), np.where(RNG.standard_normal((2, 5)) > 0, 1.0, -1.0))
W = RNG.standard_normal((2, 3))


@pytest.mark.parametrize("lam", [1e308, 1.7e308, np.finfo(float).max])
def test_prox_at_lam_near_the_float_maximum_is_silent_and_right(lam):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        theta = np.asarray(mo.prox(LOG, W, lam=lam))
    # independent: theta = w - grad f(theta) / lam, |grad f| <= max ||x_j|| / 2 * ... ~ 1: a step far
    # below half an ulp of w, so theta is w to the last bit
    step = np.abs(np.asarray(LOG.grad(W))) / lam
    assert np.all(step < np.spacing(np.abs(W)) / 2) and np.array_equal(theta, W)


@pytest.mark.parametrize("lam", [True, False, np.True_, np.array([True, False])], ids=str)
def test_lam_a_bool_is_refused_as_a_bool(lam):
    with pytest.raises(ValueError, match=r"^lam must be a number, not a bool \(got ") as e:
        mo.prox(LOG, W, lam=lam)
    assert len(str(e.value).splitlines()) == 1


def test_an_uncertified_prox_names_lam_and_the_modulus():
    rng = np.random.default_rng(0)
    m = mo.Multinomial(rng.standard_normal((2, 6, 3)), rng.integers(0, 3, (2, 6)), n_classes=3, mu=0)
    with pytest.raises(
        mo.ProxConvergenceError, match=r"at lam = 1e-300 \(the bound scales as 1/\(lam \+ mu\) = 1/1e-300\)"
    ):
        mo.prox(m, rng.standard_normal((2, 9)), lam=1e-300, tol=1e-6)


# -- 3. check --save-counterexamples on a full disk; 5. the explanation of a negative right side ---


def _negative_rhs(family, trials, rng):
    return {"x": rng.uniform(0, 1, 5)}


def neg():
    """x <= x - 2: fails, every right side negative."""
    return Statement(
        id="mine.neg",
        source="mine",
        paper="mine",
        latex="",
        text="",
        assumptions=("x",),
        families={"quadratic": ("mine",)},
        claimed="upper",
        instances=_negative_rhs,
        evaluate=lambda b, c: {"p": Sides(b["x"], b["x"] - 2.0, "upper")},
        claim={"c": 1.0},
    )


def _module(tmp_path):
    path = tmp_path / "negmod.py"
    path.write_text(
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
        "from test_bad_input_issue28_weak import neg\nSTATEMENTS = (neg(),)\n"
    )
    return path


def test_a_full_disk_under_save_counterexamples_is_exit_2(tmp_path, capsys, monkeypatch):
    from moreau.analysis.engine import records

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(records, "atomic_write", full)
    cex = tmp_path / "cex"
    err = _one_line_exit_2(
        ["check", "--module", str(_module(tmp_path)), "--save-counterexamples", str(cex)],
        capsys,
        "No space left on device",
    )
    assert err.startswith(f"moreau check: cannot write --save-counterexamples {cex}/")
    assert not list(cex.glob("*.npz"))


def test_a_negative_right_side_is_explained_without_v(tmp_path, capsys):
    assert main(["check", "--module", str(_module(tmp_path))]) == 1
    out = " ".join(capsys.readouterr().out.split())  # the report wraps long lines
    assert (
        "right side negative on 6/6 instances" in out
        and "(the bound is below 0 there; the max ratio leaves them out)" in out
    )


# -- 4. zero clients -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, d",
    [
        (lambda: mo.Logistic(np.ones((0, 6, 3)), np.ones((0, 6))), 3),
        (lambda: mo.Quadratic(np.ones((0, 3, 3)), np.ones((0, 3))), 3),
        (lambda: mo.Multinomial(np.ones((0, 6, 3)), np.ones((0, 6), int), n_classes=2), 6),
    ],
    ids=["logistic", "quadratic", "multinomial"],
)
def test_zero_clients_give_an_empty_batch(make, d):
    f = make()
    assert f.batch_shape == (0,)
    assert np.shape(mo.prox(f, np.zeros((0, d)), 1.0)) == (0, d)
    assert np.shape(f.value(np.zeros((0, d)))) == (0,)


def test_zero_clients_without_n_classes_name_it():
    with pytest.raises(ValueError, match=r"^n_classes must be given when y is empty"):
        mo.Multinomial(np.ones((0, 6, 3)), np.ones((0, 6), int))


# -- 5. cosmetics --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source, short",
    [
        ("Paper, §4.3 (Paper III, convex term) and more", "§4.3 (Paper III, convex…"),
        ("Paper, Theorem 2 (a), (b)", "Theorem 2 (a), (b)"),
        ("Paper, abcdefghijklmnopqrstuvwxyzabc", "abcdefghijklmnopqrstuvwxy…"),
    ],
)
def test_the_source_column_is_cut_at_a_word_with_an_ellipsis(source, short):
    from moreau.analysis.engine.report import _short

    assert _short(source) == short and len(short) <= 26


@pytest.mark.parametrize("argv", [["--help"], ["reproduce", "--help"], ["check", "--help"]])
def test_help_has_no_rst_markup(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "moreau" in out and "``" not in out
