"""The rate framework: fit_exponent, rate_sides, rate parts through judge, the runner, the JSON and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from moreau._cli import main
from moreau.analysis.engine import registry, runner
from moreau.analysis.engine.core import Mutant, Sides, Statement, fit_exponent, judge, rate_sides
from moreau.analysis.engine.report import mutant_verdicts

GRID = np.array([50.0, 100.0, 200.0, 500.0, 1000.0, 5000.0])


# --- fit_exponent ------------------------------------------------------------------


@pytest.mark.parametrize("a", [-1.0, -0.5, 0.0, 1.7])
def test_exact_power_law_slope_exact(a):
    y = 3.0 * GRID**a
    slope, (lo, hi) = fit_exponent(GRID, y)
    assert slope == pytest.approx(a, abs=1e-12)
    assert hi - lo < 1e-10  # no residuals: zero-width interval up to rounding
    se = 0.01 * y  # 1% standard errors: the interval has the delta-method width, centred on a
    slope, (lo, hi) = fit_exponent(GRID, y, y_se=se, level=0.95)
    u = np.log(GRID) - np.log(GRID).mean()
    half = 1.959963984540054 * 0.01 * np.sqrt(np.sum(u**2)) / np.sum(u**2)
    assert slope == pytest.approx(a, abs=1e-12)
    assert (lo, hi) == (
        pytest.approx(a - half, rel=1e-12, abs=1e-12),
        pytest.approx(a + half, rel=1e-12, abs=1e-12),
    )


def test_residual_interval_is_the_textbook_one():
    """Compare with scipy.stats.linregress: the same slope and standard error."""
    rng = np.random.default_rng(1)
    y = GRID**-0.7 * np.exp(rng.normal(0, 0.1, GRID.size))
    slope, (lo, hi) = fit_exponent(GRID, y, level=0.9)
    ref = stats.linregress(np.log(GRID), np.log(y))
    q = stats.t.ppf(0.95, GRID.size - 2)
    assert slope == pytest.approx(ref.slope, rel=1e-12)
    assert (hi - lo) / 2 == pytest.approx(q * ref.stderr, rel=1e-10)


def test_vectorised_over_instances_equals_rows():
    rng = np.random.default_rng(2)
    y = rng.uniform(0.5, 2.0, (5, GRID.size)) * GRID**-1.0
    se = 0.05 * y
    for x in (GRID, np.broadcast_to(GRID, y.shape) * rng.uniform(1, 2, (5, 1))):
        s, (lo, hi) = fit_exponent(x, y, y_se=se)
        assert s.shape == lo.shape == hi.shape == (5,)
        xs = np.broadcast_to(x, y.shape)
        for t in range(5):
            st, (lt, ht) = fit_exponent(xs[t], y[t], y_se=se[t])
            assert (s[t], lo[t], hi[t]) == (st, lt, ht)
            assert np.ndim(st) == 0


LEVEL = 0.9
SWEEPS = 4000


def _coverage_bounds(n, p):
    """Binomial count bounds with false-alarm probability < 1e-6 (normal tail at 5 sd: 5.7e-7)."""
    sd = np.sqrt(n * p * (1 - p))
    return n * p - 5 * sd, n * p + 5 * sd


def test_monte_carlo_interval_covers_true_slope_at_its_level():
    """Seeded simulation: y = mean of K exponential draws of mean c n^a; the interval
    from the standard errors covers a in about LEVEL of SWEEPS sweeps (delta method,
    K = 400 draws per point)."""
    rng = np.random.default_rng(3)
    a, K = -1.0, 400
    draws = rng.exponential(1.0, (SWEEPS, GRID.size, K)) * (2.0 * GRID**a)[:, None]
    y = draws.mean(axis=-1)
    se = draws.std(axis=-1, ddof=1) / np.sqrt(K)
    _, (lo, hi) = fit_exponent(GRID, y, y_se=se, level=LEVEL)
    covered = int(np.sum((lo <= a) & (a <= hi)))
    low, high = _coverage_bounds(SWEEPS, LEVEL)
    assert low <= covered <= high, (covered, low, high)


def test_residual_interval_covers_true_slope_at_its_level():
    """Gaussian noise on log y: the t interval is exact; coverage ~ LEVEL."""
    rng = np.random.default_rng(4)
    a = -0.5
    y = GRID**a * np.exp(rng.normal(0, 0.2, (SWEEPS, GRID.size)))
    _, (lo, hi) = fit_exponent(GRID, y, level=LEVEL)
    covered = int(np.sum((lo <= a) & (a <= hi)))
    low, high = _coverage_bounds(SWEEPS, LEVEL)
    assert low <= covered <= high, (covered, low, high)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(x=GRID, y=-GRID), "y must be finite and > 0"),
        (dict(x=0 * GRID, y=GRID), "x must be finite and > 0"),
        (dict(x=np.ones(6), y=GRID), "two distinct"),
        (dict(x=GRID[:2], y=GRID[:2]), "at least 3 points"),
        (dict(x=[1.0], y=[1.0]), "at least 2 points"),
        (dict(x=GRID, y=GRID, level=1.0), "level must be"),
        (dict(x=GRID, y=GRID, y_se=-GRID), "y_se must be finite and >= 0"),
        (dict(x=GRID, y=GRID, y_se=np.ones(3)), "y_se must broadcast"),
        (dict(x=GRID[:3], y=GRID), "x and y must broadcast"),
    ],
    ids=["y<0", "x=0", "constant-x", "G=2-no-se", "G=1", "level", "se<0", "se-shape", "xy-shape"],
)
def test_fit_exponent_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        fit_exponent(**kwargs)


# --- rate_sides and judge ----------------------------------------------------------


def _rate(slope, lo, hi, exponent, **kw):
    return judge("r", rate_sides(np.array(slope), (np.array(lo), np.array(hi)), exponent, **kw))


def test_rate_equal_holds_when_interval_contains_exponent():
    r = _rate([-1.0, -0.9, -1.2], [-1.05, -0.95, -1.3], [-0.95, -0.85, -1.1], -1.0, atol=0.0)
    assert not r.holds and list(r.failures) == [1, 2] and r.claimed == "rate" and not r.tight
    assert r.slack[0] == pytest.approx(0.05) and r.slack[1] < 0 and r.slack[2] < 0
    r = _rate([-0.9], [-0.95], [-0.85], -1.0, atol=0.06)  # widened by atol: holds
    assert r.holds and r.max_ratio == pytest.approx(0.9)


def test_rate_at_most_fails_only_on_certainly_slower_decay():
    # slope -2 (faster than -1): holds; interval straddling -1: holds; certainly slower: fails
    r = _rate([-2.0, -0.98, -0.5], [-2.1, -1.02, -0.6], [-1.9, -0.94, -0.4], -1.0, kind="at most", atol=0.0)
    assert list(r.failures) == [2]
    flipped = judge(
        "r",
        rate_sides(
            np.array([-2.0, -0.5]), (np.array([-2.1, -0.6]), np.array([-1.9, -0.4])), -1.0, kind="at most"
        ),
        flip=True,
    )
    assert list(flipped.failures) == [0]  # flipped: claims the decay is no faster than n^-1


def test_rate_applicable_mask_and_nan():
    r = _rate([-0.5, np.nan], [-0.6, np.nan], [-0.4, np.nan], -1.0, applicable=[False, True])
    assert r.applicable == 1 and list(r.failures) == [1]  # a NaN slope never holds


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(kind="less"), "kind must be"),
        (dict(atol=-0.1), "atol must be"),
        (dict(ci=(np.array([0.0]), np.array([-1.0]))), "lo <= hi"),
        (dict(ci=np.array([0.0])), "ci must be a pair"),
    ],
)
def test_rate_sides_bad_input(kwargs, match):
    kw = dict(ci=(np.array([-1.1]), np.array([-0.9])))
    kw.update(kwargs)
    with pytest.raises(ValueError, match=match):
        rate_sides(np.array([-1.0]), kw.pop("ci"), -1.0, **kw)
    with pytest.raises(ValueError, match="kind"):
        Sides([1.0], [1.0], "rate")  # a rate part is built by rate_sides (it sets kind)


# --- a toy rate statement through the Statement/Mutant machinery, runner, JSON, CLI --------


def _sweeps(family, trials, rng):
    T = trials or 8
    return {"c": rng.uniform(0.5, 2.0, T), "seed": rng.integers(0, 2**31, T)}


def _sweep_evaluate(batch, claim):
    """Monte Carlo: the mean of 2000 exponential draws of mean c n^-1 on each grid point."""
    rng = np.random.default_rng(batch["seed"][0])
    T, K = batch["c"].size, 2000
    draws = rng.exponential(1.0, (T, GRID.size, K)) * (batch["c"][:, None] * GRID**-1.0)[..., None]
    slope, ci = fit_exponent(GRID, draws.mean(-1), y_se=draws.std(-1, ddof=1) / np.sqrt(K), level=0.99)
    return {
        "error vs n": rate_sides(
            slope,
            ci,
            claim["exponent"],
            atol=0.02,
            level=0.99,
            note="E = c n^-1 exactly",
            constants={"c": "drawn"},
        )
    }


TOY_RATE = Statement(
    id="toy.rate",
    source="toy",
    paper="none.md",
    latex=r"E \propto n^{-1}",
    text="E ~ n^-1",
    assumptions=("toy",),
    families={"quadratic": ("toy",)},
    claimed="rate",
    instances=_sweeps,
    evaluate=_sweep_evaluate,
    claim={"exponent": -1.0},
    mutants=(Mutant("n^-1/2 for n^-1", {"exponent": -0.5}), Mutant("n^-1.1 for n^-1", {"exponent": -1.1})),
)


@pytest.fixture
def rate_catalogue(monkeypatch):
    cat = {"toy.rate": TOY_RATE}
    monkeypatch.setattr(registry, "catalogue", lambda: cat)
    monkeypatch.setattr(runner, "catalogue", lambda: cat)
    return cat


def test_rate_statement_holds_and_rejects_mutants(rate_catalogue):
    (rec,) = runner.run(mutants=True)
    assert rec.result.holds
    assert all(mutant_verdicts([rec]).values())
    j = runner.record_json(rec)
    (part,) = j["parts"]
    assert part["claimed"] == "rate" and part["kind"] == "equal" and part["level"] == 0.99
    assert len(part["slope"]) == len(part["slope_ci"]) == len(part["exponent"]) == 8
    assert all(lo <= -1.0 + 0.02 and hi >= -1.0 - 0.02 for lo, hi in part["slope_ci"])
    assert part["exponent"] == [-1.0] * 8 and part["min_slack"] > 0
    json.dumps(j)


def test_rate_cli_line(rate_catalogue, capsys):
    assert main(["check", "toy.rate", "--mutants", "-v"]) == 0
    out = capsys.readouterr().out
    assert "error vs n [rate]: holds on 8/8" in out and "claimed exponent -1 ± 0.02, 99% interval" in out
    assert "toy.rate" in out and "holds (shape; the constant is not refutable)" in out


def test_monte_carlo_bound_part_json():
    """An upper bound with lhs_ci reports its level and the interval at the instance closest to failing."""
    from moreau.analysis.engine.core import Result

    st = TOY_RATE
    sides = Sides(
        [1.0, 2.0, 0.5], [3.0, 2.5, 1.0], lhs_ci=([0.9, 1.9, 0.1], [1.1, 2.1, 0.9]), confidence=0.95
    )
    rec = runner.Record(st, Result(st.id, "quadratic", 3, [judge("bound", sides)], 0.0))
    (part,) = runner.record_json(rec)["parts"]
    assert part["level"] == 0.95 and part["worst_instance"] == 1 and part["level_jointly_over"] == 3
    # the interval is widened to hold jointly over the 3 instances (Bonferroni): half-width 0.1 at 95 %
    # per instance becomes 0.1 z(1 - 0.05/6) / z(1 - 0.05/2)
    from scipy.stats import norm

    h = 0.1 * norm.ppf(1 - 0.05 / 6) / norm.ppf(1 - 0.05 / 2)
    assert (
        part["lhs_ci"] == pytest.approx([2.0 - h, 2.0 + h], rel=1e-12)
        and part["rhs"] == 2.5
        and part["lhs"] == 2.0
    )


def test_rate_at_least_fails_only_on_certainly_slower_vanishing():
    """An upper bound C R^1 as R -> 0: the quantity must vanish at least linearly (slope >= 1)."""
    r = _rate([2.0, 1.01, 0.5], [1.9, 0.95, 0.4], [2.1, 1.05, 0.6], 1.0, kind="at least", atol=0.0)
    assert list(r.failures) == [2] and r.slack[0] == pytest.approx(1.1)
    flipped = judge(
        "r",
        rate_sides(np.array([2.0, 0.5]), (np.array([1.9, 0.4]), np.array([2.1, 0.6])), 1.0, kind="at least"),
        flip=True,
    )
    assert list(flipped.failures) == [0]
