"""experiments/: the envelope demo writes a valid figure and arrays that independent computations confirm.

The references are computed here from the saved data alone (numpy, no moreau): the
closed form of a quadratic's envelope and brute-force minimisation on a fine grid.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from _tol import assert_close

pytest.importorskip("matplotlib", reason="the envelope demo draws with matplotlib (extra 'plots')")
from moreau.experiments import envelope_demo  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
H = 1e-4  # spacing of the brute-force grids


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Run the demo once with its defaults; ``(out dir, loaded JSON)``."""
    out = tmp_path_factory.mktemp("envelope_demo")
    assert envelope_demo.main(["--out", str(out), "--seed", "3"]) == 0
    return out, json.loads((out / "envelope_demo.json").read_text())


def brute_envelope(theta, f_theta, w, lam):
    """``(min, argmin)`` over the grid ``theta`` of ``f(theta) + lam/2 (theta - w)^2``, per ``w``."""
    h = f_theta[None, :] + lam / 2 * (theta[None, :] - np.asarray(w)[:, None]) ** 2
    i = np.argmin(h, axis=1)
    return h[np.arange(len(w)), i], theta[i]


def test_png_is_a_slide_sized_png(run):
    out, _ = run
    data = (out / "envelope_demo.png").read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 20_000, "a three-panel figure with curves is far larger than 20 kB"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1800, 570)  # 12 x 3.8 in at 150 dpi


def test_json_carries_provenance(run):
    _, d = run
    prov = d["provenance"]
    assert {"params", "seed", "versions", "git_commit"} <= prov.keys()
    assert prov["seed"] == 3 and prov["params"]["seed"] == 3
    assert prov["params"]["lams"] == [0.5, 2.0, 8.0]
    assert prov["versions"]["numpy"] == np.__version__


def test_quadratic_envelope_is_the_closed_form(run):
    _, d = run
    p, q = d["provenance"]["params"], d["quadratic"]
    a, b = p["a"], p["b"]
    w = np.array(q["theta"])
    assert_close(q["f"], a * w**2 / 2 - b * w)
    fine = np.arange(-20, 20 + H, H)
    for lam, F in zip(p["quad_lams"], q["envelope"], strict=True):
        assert lam > abs(a)
        closed = lam * a / (lam + a) * w**2 / 2 - lam / (lam + a) * b * w - b**2 / (2 * (lam + a))
        assert_close(F, closed, err_msg=f"lam={lam}")
        # the closed form itself, by brute force: the grid covers the prox (b + lam w)/(a + lam)
        # (within [-10, 8] here); a grid min is >= the true min and misses it by at most
        # (curvature of the objective) H^2 / 8 = (lam + a) H^2 / 8 (< 1e-7); 1e-12: rounding
        assert np.all(np.abs((b + lam * w) / (a + lam)) < 19)
        brute, _ = brute_envelope(fine, a * fine**2 / 2 - b * fine, w[::8], lam)
        gap = brute - closed[::8]
        assert np.all(gap >= -1e-12) and np.all(gap <= (lam + a) * H**2 / 8 + 1e-12), lam


def test_logistic_envelope_and_prox_by_brute_force(run):
    _, d = run
    p, lg = d["provenance"]["params"], d["logistic"]
    z = np.array(lg["y"]) * np.array(lg["x"])  # signed features: margins are z * theta
    mu, t = p["mu"], np.array(lg["theta"])
    L = np.mean(z**2) / 4 + mu

    def f(theta):
        return np.mean(np.logaddexp(0, -np.outer(theta, z)), axis=1) + mu / 2 * theta**2

    assert_close(lg["f"], f(t))
    ts = lg["minimiser"]  # f'(θ*) = 0
    assert abs(np.mean(-z / (1 + np.exp(z * ts))) + mu * ts) < 1e-10
    F, prox = np.array(lg["envelope"]), np.array(lg["prox"])
    assert np.all(F <= f(t)[None, :] + 1e-12), "F_lam <= f"
    assert np.all(np.diff(F, axis=0) >= -1e-12), "F_lam increases with lam (lams ascending)"
    fine = np.arange(t[0] - 2, t[-1] + 2 + H, H)
    f_fine = f(fine)
    for lam, F_lam, p_lam in zip(p["lams"], F, prox, strict=True):
        w = t[::10]
        brute, argmin = brute_envelope(fine, f_fine, w, lam)
        # a grid min is >= the true min and misses it by <= (L + lam) H^2 / 8 (< 2e-8 here),
        # L = mean(z^2)/4 + mu bounds f'' (l'' <= 1/4); 1e-12: rounding
        gap = brute - F_lam[::10]
        assert np.all(gap >= -1e-12) and np.all(gap <= (L + lam) * H**2 / 8 + 1e-12), lam
        # convex in theta: the grid argmin is a grid neighbour of the prox
        assert np.max(np.abs(argmin - p_lam[::10])) <= H * (1 + 1e-6), lam
        # shrinkage towards the minimiser, never past it
        assert np.all(np.abs(p_lam - ts) <= np.abs(t - ts) + 1e-12), lam


def test_quad_lams_must_exceed_abs_a(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        envelope_demo.main(["--out", str(tmp_path), "--quad-lams", "0.5", "2"])
    assert exc.value.code == 2
    assert "|a| = 1" in capsys.readouterr().err
    assert not (tmp_path / "envelope_demo.png").exists()
