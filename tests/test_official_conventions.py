"""The pFedMe authors' conventions (``moreau.experiments._official``) and ``pfedme-official-conventions``.

Every switch off: the loops equal ``moreau.fl.pfedme`` / ``moreau.fl.per_fedavg`` on the same draws.
Every switch on: an independent per-client loop (own softmax gradient, the draws re-derived from the
documented layout, the test batches sliced in order) gives the same iterates, and each switch moves them.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest
from _claims import check_paired_claim

import moreau as mo
from moreau import fl
from moreau.experiments import _official as off

REL = 1e-12


def rel(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def problem(seed=0, m=6, n=15, d=4, C=3, mu=0.1):
    """Padded multinomial clients of different sizes (valid rows first): train and test objectives."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(2):
        X = np.concatenate([rng.standard_normal((m, n, d)), np.ones((m, n, 1))], axis=-1)
        y = rng.integers(0, C, (m, n))
        wt = (np.arange(n) < rng.integers(5, n + 1, m)[:, None]).astype(float)
        out.append((X, y, wt))
    (X, y, wt), (Xt, yt, wtt) = out
    f = mo.Multinomial(X, y, n_classes=C, mu=mu, weights=wt)
    ft = mo.Multinomial(Xt, yt, n_classes=C, mu=mu, weights=wtt)
    return f, ft, out, mu, C


PF = {"lam": 5.0, "eta": 0.05, "beta": 1.5, "R": 4, "rounds": 5, "S": 3, "batch_size": 4}
PA = {"alpha": 0.1, "beta": 0.2, "tau": 3, "rounds": 5, "S": 3, "D": 4, "D_prime": 5}


# ---------------------------------------------------------------- every switch off = moreau.fl


@pytest.mark.parametrize("inner_eta", ["client", 0.05])
@pytest.mark.parametrize("personal,fl_personal", [("inner", "inner"), ("prox", "certified")])
def test_pfedme_switches_off_equals_moreau_fl(inner_eta, personal, fl_personal):
    f = problem()[0]
    h = fl.pfedme(f, **PF, inner=3, inner_eta=inner_eta, rng=7, personal=fl_personal)
    o = off.pfedme(f, **PF, K=3, inner_eta=inner_eta, rng=7, personal=personal)
    for a, b in ((o.w_global, h.w_global), (o.w_local, h.w_local), (o.theta, h.theta)):
        assert rel(a, b) <= REL


@pytest.mark.parametrize("variant,extra", [("first_order", {}), ("hessian", {"D_second": 3})])
def test_per_fedavg_switches_off_equals_moreau_fl(variant, extra):
    f = problem()[0]
    h = fl.per_fedavg(f, **PA, variant=variant, rng=3, **extra)
    o = off.per_fedavg(f, **PA, variant=variant, rng=3, **extra)
    for a, b in ((o.w_global, h.w_global), (o.w_local, h.w_local), (o.theta, h.theta)):
        assert rel(a, b) <= REL


# ---------------------------------------------------------------- each switch changes the result


@pytest.mark.parametrize(
    "switch",
    [{"warm_start": True}, {"hidden_mu": off.OFFICIAL_MU}, {"sample_weights": True}, {"personal": "local"}],
)
def test_each_pfedme_switch_changes_the_result(switch):
    f = problem()[0]
    base = off.pfedme(f, **PF, K=3, rng=7)
    o = off.pfedme(f, **PF, K=3, rng=7, **switch)
    assert rel(o.theta[1:], base.theta[1:]) > 1e-9
    if "personal" in switch:  # evaluation only: the same training
        assert rel(o.w_global, base.w_global) == 0 and rel(o.theta, o.w_local) == 0
    else:
        assert rel(o.w_global[1:], base.w_global[1:]) > 1e-9


@pytest.mark.parametrize("switch", ["sample_weights", "test_adaptation"])
def test_each_per_fedavg_switch_changes_the_result(switch):
    f, ft = problem()[:2]
    base = off.per_fedavg(f, **PA, rng=3)
    o = off.per_fedavg(f, **PA, rng=3, test=ft, test_batch_size=4, **{switch: True})
    assert rel(o.theta, base.theta) > 1e-9
    assert (rel(o.w_global, base.w_global) == 0) == (
        switch == "test_adaptation"
    )  # adaptation: evaluation only


# ---------------------------------------------------------------- switches on = an independent loop


def grad_i(X, y, w, mu, theta, C):
    """Mean cross-entropy gradient of one client's rows (weights w) plus the ridge: theta (D*C,)."""
    Z = X @ theta.reshape(X.shape[1], C)
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    return (X.T @ ((P - np.eye(C)[y]) * w[:, None]) / w.sum()).reshape(-1) + mu * theta


def test_pfedme_all_conventions_equal_a_per_client_loop():
    f, _, ((X, y, wt), _), mu, C = problem()
    m, B, lam, eta, beta, R, K, S, hmu = X.shape[0], 4, 5.0, 0.05, 1.5, 4, 3, 3, off.OFFICIAL_MU
    o = off.pfedme(
        f,
        lam=lam,
        eta=eta,
        beta=beta,
        R=R,
        K=K,
        rounds=5,
        S=S,
        batch_size=B,
        inner_eta=0.05,
        rng=11,
        warm_start=True,
        hidden_mu=hmu,
        sample_weights=True,
        personal="local",
    )
    rng, n = np.random.default_rng(11), wt.sum(axis=1)
    w = np.zeros(f.dim)
    for t in range(5):
        W, theta = np.tile(w, (m, 1)), np.tile(w, (m, 1))
        for _ in range(R):
            rows = np.minimum((rng.random((m, B)) * n[:, None]).astype(int), n[:, None].astype(int) - 1)
            for i in range(m):
                for _ in range(K):  # theta kept from the last local step (warm start), hidden L2
                    g = grad_i(X[i, rows[i]], y[i, rows[i]], np.ones(B), mu, theta[i], C)
                    theta[i] = theta[i] - 0.05 * (g + lam * (theta[i] - W[i]) + hmu * theta[i])
                W[i] = W[i] - eta * lam * (W[i] - theta[i])
        sel = np.sort(np.argsort(rng.random(m))[:S])
        w = (1 - beta) * w + beta * sum(n[i] * W[i] for i in sel) / n[sel].sum()
        assert rel(o.w_global[t + 1], w) <= 1e-10
        assert rel(o.theta[t + 1], W) <= 1e-10  # the evaluated "personalised" models: the local models


def test_per_fedavg_all_conventions_equal_a_per_client_loop():
    f, ft, ((X, y, wt), (Xt, yt, wtt)), mu, C = problem()
    m, B, Bt, a, b, tau, S = X.shape[0], 4, 4, 0.1, 0.2, 3, 3
    o = off.per_fedavg(
        f,
        alpha=a,
        beta=b,
        tau=tau,
        rounds=5,
        S=S,
        D=B,
        D_prime=B,
        rng=5,
        sample_weights=True,
        test_adaptation=True,
        test=ft,
        test_batch_size=Bt,
    )
    rng, n, nt = np.random.default_rng(5), wt.sum(axis=1), wtt.sum(axis=1).astype(int)

    def adapted(
        t, w
    ):  # batches 2t and 2t+1 of the test rows in order (short last batch), SGD alpha then beta
        out = []
        for i in range(m):
            th = w.copy()
            for j, step in ((2 * t, a), (2 * t + 1, b)):
                nb = -(-nt[i] // Bt)
                lo = (j % nb) * Bt
                r = np.arange(lo, min(lo + Bt, nt[i]))
                th = th - step * grad_i(Xt[i, r], yt[i, r], np.ones(r.size), mu, th, C)
            out.append(th)
        return np.array(out)

    w = np.zeros(f.dim)
    assert rel(o.theta[0], adapted(0, w)) <= 1e-10
    for t in range(5):
        sel = np.sort(np.argsort(rng.random(m))[:S])
        W = np.tile(w, (m, 1))
        for _ in range(tau):
            r1, r2 = (
                np.minimum((rng.random((m, B)) * n[:, None]).astype(int), n[:, None].astype(int) - 1)
                for _ in range(2)
            )
            for i in range(m):
                wt_i = W[i] - a * grad_i(X[i, r1[i]], y[i, r1[i]], np.ones(B), mu, W[i], C)
                W[i] = W[i] - b * grad_i(X[i, r2[i]], y[i, r2[i]], np.ones(B), mu, wt_i, C)
        w = sum(n[i] * W[i] for i in sel) / n[sel].sum()
        assert rel(o.w_global[t + 1], w) <= 1e-10
        assert rel(o.theta[t + 1], adapted(t + 1, w)) <= 1e-10


def test_adaptation_batch_is_with_weights_of_the_batch():
    _, ft, (_, (_, _, wtt)), _, _ = problem()
    theta = np.random.default_rng(2).standard_normal((wtt.shape[0], ft.dim))
    for j in range(4):
        batch = off.adaptation_batch(ft, 4, np.full(wtt.shape[0], j))
        nt = wtt.sum(axis=1).astype(int)
        lo = (j % -(-nt // 4)) * 4
        ind = (np.arange(wtt.shape[1]) >= lo[:, None]) & (
            np.arange(wtt.shape[1]) < np.minimum(lo + 4, nt)[:, None]
        )
        np.testing.assert_allclose(
            np.asarray(batch.grad(theta)),
            np.asarray(ft.with_weights(ind * 1.0).grad(theta)),
            rtol=1e-12,
            atol=1e-14,
        )


def test_bad_switches_are_refused():
    f = problem()[0]
    with pytest.raises(ValueError, match="personal"):
        off.pfedme(f, **PF, K=3, rng=7, personal="bar")
    with pytest.raises(ValueError, match="test_adaptation"):
        off.per_fedavg(f, **PA, rng=3, test_adaptation=True)


# ---------------------------------------------------------------- the experiment, --quick


@pytest.mark.reproduce
def test_pfedme_official_conventions_quick(tmp_path):
    pytest.importorskip("matplotlib", reason="moreau reproduce draws with matplotlib (extra 'plots')")
    from moreau.experiments import _sweep
    from moreau.experiments.pfedme_official_conventions import CONVENTIONS, METHODS, NAME
    from moreau.experiments.registry import get

    manifest = _sweep.run(get(NAME), tmp_path, quick=True, workers=1)
    with open(tmp_path / f"{NAME}.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["convention", "round", "method", "seed", "metric", "value"]
    runs = {(r["convention"], r["method"]) for r in rows}
    pfedme = {"paper", "warm-start", "hidden-L2", "sample-weights", "local-as-personal", "all"}
    perfedavg = {"paper", "sample-weights", "test-adaptation", "all"}
    assert runs == {
        (c, m)
        for c in CONVENTIONS
        for m in METHODS
        if (c in pfedme if m.startswith("pFedMe") else c in perfedavg)
    }
    assert {int(r["round"]) for r in rows} == set(range(21)) and {r["seed"] for r in rows} == {"0", "1", "2"}
    assert all(0 <= float(r["value"]) <= 100 for r in rows if "accuracy" in r["metric"])

    def gm(conv):  # the global model's test accuracy per (seed, round)
        return {
            (r["seed"], r["round"]): r["value"]
            for r in rows
            if r["convention"] == conv and r["method"] == "pFedMe-GM" and r["metric"] == "test_accuracy"
        }

    assert len(gm("paper")) == 3 * 21 and gm("local-as-personal") == gm("paper")  # an evaluation-only switch
    with open(tmp_path / f"{NAME}-table.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert {r["selection"] for r in table} == {
        "last round",
        "best round on test (leaks the test set)",
        "best round on validation",
    }
    claims = manifest["claims"]
    assert len(claims) == 11 and all(v["quick"] for v in claims)
    assert all(v["method"].startswith("paired t over 3 seeds") for v in claims)
    last = {}  # (method, convention) -> the last round's test accuracy per seed, from the CSV
    for r in sorted(rows, key=lambda r: int(r["seed"])):
        if r["metric"] == "test_accuracy" and r["round"] == "20":
            last.setdefault((r["method"], r["convention"]), []).append(float(r["value"]))
    last = {k: np.array(v) for k, v in last.items()}
    assert {len(v) for v in last.values()} == {3}

    def change(m, c):  # m's per-seed change from the papers' algorithms under convention c
        return last[(m, c)] - last[(m, "paper")]

    gap = {c: last[("pFedMe-PM", c)] - last[("Per-FedAvg", c)] for c in ("paper", "all")}
    pm, gm, pa = "pFedMe-PM", "pFedMe-GM", "Per-FedAvg"
    expected = [  # (words of the claim, its comparisons); the models each convention changes, in METHODS' order
        ("together raise pFedMe's personalised accuracy", {f"{pm}: all − paper": change(pm, "all")}),
        ("together raise pFedMe's global-model accuracy", {f"{gm}: all − paper": change(gm, "all")}),
        ("together raise Per-FedAvg's accuracy", {f"{pa}: all − paper": change(pa, "all")}),
        *(
            (f"{c} alone", {f"{m}: {c} − paper": change(m, c) for m in ms})
            for c, ms in (
                ("warm-start", (pm, gm)),
                ("hidden-L2", (pm, gm)),
                ("sample-weights", (pm, gm, pa)),
                ("local-as-personal", (pm,)),
                ("test-adaptation", (pa,)),
            )
        ),
        ("pFedMe-PM ahead of Per-FedAvg with the papers' algorithms", {f"{pm} − {pa} (paper)": gap["paper"]}),
        ("pFedMe-PM ahead of Per-FedAvg with the authors' conventions", {f"{pm} − {pa} (all)": gap["all"]}),
        (
            "conventions widen pFedMe-PM's lead",
            {"(PM − Per-FedAvg)_all − (PM − Per-FedAvg)_paper": gap["all"] - gap["paper"]},
        ),
    ]
    for v, (words, diffs) in zip(claims, expected, strict=True):
        assert words in v["claim"]
        check_paired_claim(v, diffs)
        means = {n: d.mean() for n, d in diffs.items()}
        assert v["value"] == pytest.approx(
            means if " alone " in v["claim"] else next(iter(means.values())), rel=1e-12, abs=1e-12
        )
    for stem in (NAME, f"{NAME}-curves"):
        assert (tmp_path / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
