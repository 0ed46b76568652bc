"""Issue 29: every hyperparameter the papers name can be set with ``--set``, is range-checked, is
recorded in the manifest, and reaches the algorithm (a spy on the ``moreau.fl`` function)."""

from __future__ import annotations

import pytest

from moreau import fl
from moreau.experiments._config import ConfigError, resolve
from moreau.experiments._sweep import run
from moreau.experiments.registry import get


def _spy(monkeypatch, name):
    """Replace ``moreau.fl.<name>`` by a wrapper recording each call's keyword arguments."""
    calls = []
    real = getattr(fl, name)

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(fl, name, spy)
    return calls


_SMALL_PFEDME = {"n_clients": 10, "S": 5, "max_size": 30, "rounds": 2, "seeds": 1}


@pytest.mark.parametrize("name", ["pfedme-synthetic", "pfedme-digits"])
def test_pfedme_personal_learning_rate_and_inner_steps_reach_moreau_fl(tmp_path, monkeypatch, name):
    calls = _spy(monkeypatch, "pfedme")
    small = dict(_SMALL_PFEDME) if name == "pfedme-synthetic" else {"rounds": 2, "seeds": 1}
    overrides = [("--set", k, v) for k, v in {**small, "inner_eta": 0.03, "K": 3}.items()]
    manifest = run(get(name), tmp_path, quick=True, workers=1, overrides=overrides)
    assert manifest["configuration"]["set"]["inner_eta"] == 0.03
    assert manifest["configuration"]["effective"]["K"] == 3
    assert calls and all(c["inner_eta"] == 0.03 and c["inner"] == 3 for c in calls)
    params, _ = resolve(get(name), True, None)
    assert params["inner_eta"] == 0  # the default: 1/(L_i + lambda) per client


@pytest.mark.parametrize(
    ("name", "key", "value"),
    [
        ("pfedme-synthetic", "inner_eta", -0.1),
        ("pfedme-digits", "K", 0),
        ("fedprox-fig1d", "gamma_scale", 0),
        ("fedprox-comm", "gamma_scale", 2.0),
        ("fedprox-comm", "eta_scale", 1.5),
    ],
)
def test_out_of_range_hyperparameters_are_refused_naming_the_key(name, key, value):
    with pytest.raises(ConfigError, match=key):
        resolve(get(name), True, None, {key: value})


def test_fedprox_fig1d_gamma_and_eta_scales_reach_moreau_fl(tmp_path, monkeypatch):
    over = {"seeds": 1, "rounds": 3, "d": 5, "lambdas": [0.1, 0.5], "R_levels": [0.1], "n_test": 10}
    runs = {}
    for scale in (1.0, 0.5):
        calls = _spy(monkeypatch, "fedprox")
        o = {**over, "gamma_scale": scale, "eta_scale": scale}
        manifest = run(get("fedprox-fig1d"), tmp_path / str(scale), quick=True, workers=1, overrides=o)
        assert manifest["configuration"]["effective"]["gamma_scale"] == scale
        runs[scale] = {c["lam"]: (c["gamma"], c["eta"]) for c in calls}
    for lam in (0.1, 0.5):
        assert runs[0.5][lam][0] == pytest.approx(0.5 * runs[1.0][lam][0], rel=1e-15)
        assert runs[0.5][lam][1] == pytest.approx(0.5 * runs[1.0][lam][1], rel=1e-15)
    # the default is the paper's gamma = (lam + L)/(lam L), eta = 1/(L + lam): gamma * eta = 1/(lam L)
    g, e = runs[1.0][0.1]
    L = 1 / e - 0.1
    assert g == pytest.approx((0.1 + L) / (0.1 * L), rel=1e-12)


def test_fedprox_comm_gamma_and_eta_scales_reach_moreau_fl(monkeypatch):
    import numpy as np

    from moreau.experiments import fedprox_comm

    params, _ = resolve(
        get("fedprox-comm"), True, None, {"lam_over_L": [0.1], "gamma_scale": 0.5, "eta_scale": 0.8}
    )
    calls = _spy(monkeypatch, "fedprox")
    rows = fedprox_comm.compute(params, {"case": "generic"}, np.random.default_rng(0))
    lam, L = 0.1 * params["L"], params["L"]
    assert calls[0]["gamma"] == pytest.approx(0.5 * (lam + L) / (2 * lam * L), rel=1e-15)
    assert calls[0]["eta"] == pytest.approx(0.8 / (lam + L), rel=1e-15)
    assert rows[0]["gamma"] == calls[0]["gamma"] and rows[0]["K"] == calls[0]["K"]


def test_permfl_digits_curves_every_round_and_the_table_last_round(tmp_path):
    """permfl-digits: per-round curves for every method; PerMFL's training objective equals
    ``moreau.fl.permfl``'s own ``History.curves`` (computed apart); the table's last round is the curve's."""
    import numpy as np

    from moreau.experiments import permfl_digits
    from moreau.experiments._curves import LAST, curve, selections
    from moreau.experiments.pfedme_digits import digits, split
    from moreau.fl._permfl import permfl

    params, _ = resolve(get("permfl-digits"), True, None, {"rounds": 3, "seeds": 1})
    rows = permfl_digits.compute(params, {"seed": 0}, np.random.default_rng(5))
    for m in permfl_digits.METHODS:
        ts, acc, _ = curve(rows, "test_accuracy", m)
        assert ts.tolist() == [0, 1, 2, 3] and np.all((acc >= 0) & (acc <= 100))
    # the same draws as compute: the split, then PerMFL first
    rng = np.random.default_rng(5)
    (Xt, yt, wt), _ = split(*digits(), params["n_clients"], rng, params["train_fraction"])
    from moreau.experiments import _pfedme_runs as runs

    Y = (yt[..., None] == np.arange(params["n_classes"])).astype(float)
    f = runs.objective(Xt, Y, wt.sum(axis=-1).astype(np.int64), params["mu"])
    teams = np.arange(params["n_clients"]) // (params["n_clients"] // params["teams"])
    p = params["permfl"]
    h = permfl(
        f,
        teams,
        rounds=3,
        rng=rng,
        batch_size=p["batch"],
        **{k: p[k] for k in ("lam", "gamma", "alpha", "eta", "beta", "K", "L")},
    )
    want = h.curves(f)
    for m, key in (("PerMFL-PM", "PM"), ("PerMFL-TM", "TM"), ("PerMFL-GM", "GM")):
        np.testing.assert_allclose(curve(rows, "train_loss", m)[1][0], want[key], rtol=1e-10)
    table = selections(rows, permfl_digits.METHODS)
    last = [r for r in table if r["selection"] == LAST and r["method"] == "FedAvg"]
    assert (
        last[0]["round"] == 3 and last[0]["test_accuracy"] == curve(rows, "test_accuracy", "FedAvg")[1][0, -1]
    )
