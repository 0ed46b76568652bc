"""Regression tests for a newcomer's sweep of bad inputs (one row per fault found).

Each row: a call, the exception it must raise and a message fragment naming the argument (and
the value or the condition); then the certificates that an overflow must never leave small.
"""

from __future__ import annotations

import numpy as np
import pytest
from array_api_compat import array_namespace

import moreau as mo
from moreau import data, fl

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 6, 3))
YPM = np.where(RNG.standard_normal((4, 6)) > 0, 1.0, -1.0)
YC = np.tile([0.0, 1.0, 2.0], (4, 2))
HUGE_W = np.full((4, 6), 1e308)  # finite weights whose sum overflows float64
STRINGS = np.array(list("abcabc"))
LS = mo.LeastSquares(X, YPM, mu=0.1)
LOG = mo.Logistic(X[0], YPM[0])


def _row(name, call, exc, match):
    return pytest.param(call, exc, match, id=name)


CASES = [
    # 1. weights whose sum overflows: the normalised weights would all be 0 (the data term gone)
    _row(
        "logistic-weights-sum-overflows",
        lambda: mo.Logistic(X, YPM, weights=HUGE_W),
        ValueError,
        r"weights must have a finite sum.*overflows float64.*1e\+308",
    ),
    _row(
        "multinomial-weights-sum-overflows",
        lambda: mo.Multinomial(X, YC, weights=HUGE_W),
        ValueError,
        r"weights must have a finite sum.*1e\+308",
    ),
    _row(
        "least-squares-weights-sum-overflows",
        lambda: mo.LeastSquares(X, YPM, weights=HUGE_W),
        ValueError,
        r"weights must have a finite sum.*1e\+308",
    ),
    _row(
        "with-weights-sum-overflows",
        lambda: LOG.with_weights(np.full(6, 1e308)),
        ValueError,
        "weights must have a finite sum",
    ),
    _row(
        "fl-client-weights-sum-overflow",
        lambda: fl.fedavg(LS, eta=0.1, tau=1, rounds=1, weights=np.full(4, 1e308)),
        ValueError,
        r"weights must have a finite sum over the clients.*1e\+308",
    ),
    # 2. class counts: a stray label, an unreasonable n_classes
    _row(
        "multinomial-stray-label",
        lambda: mo.Multinomial(X[0], [0, 1, 2, 0, 1, 1e9]),
        ValueError,
        r"n_classes = max\(y\) \+ 1 = 1000000001 from the label y=1e\+09 at index \(5,\).*PiB.*max_bytes",
    ),
    _row(
        "multinomial-label-above-n-classes",
        lambda: mo.Multinomial(X[0], [0, 1, 2, 0, 1, 7], n_classes=3),
        ValueError,
        r"y must hold labels < n_classes=3 \(got 7\) at index \(5,\)",
    ),
    _row(
        "multinomial-huge-n-classes",
        lambda: mo.Multinomial(X[0], YC[0], n_classes=10**7),
        ValueError,
        r"n_classes=10000000 would need about .*PiB per prox call.*above max_bytes = 16 GiB",
    ),
    _row(
        "multinomial-max-bytes",
        lambda: mo.Multinomial(X[0], YC[0], n_classes=3, max_bytes=100),
        ValueError,
        r"n_classes=3 would need about .* above max_bytes = 100 bytes",
    ),
    _row(
        "multinomial-max-bytes-not-positive",
        lambda: mo.Multinomial(X[0], YC[0], max_bytes=0),
        ValueError,
        r"max_bytes must be a positive number \(got 0\)",
    ),
    # 3. string / object labels
    _row(
        "logistic-string-labels",
        lambda: mo.Logistic(X[0], STRINGS),
        TypeError,
        r"y must hold numeric labels \(got dtype <U1, first label 'a'\)",
    ),
    _row(
        "multinomial-string-labels",
        lambda: mo.Multinomial(X[0], STRINGS),
        TypeError,
        r"y must hold numeric labels \(got dtype <U1",
    ),
    _row(
        "logistic-object-labels",
        lambda: mo.Logistic(X[0], YPM[0].astype(object)),
        TypeError,
        r"y must hold numeric labels \(got dtype object",
    ),
    _row(
        "multinomial-object-labels",
        lambda: mo.Multinomial(X[0], YC[0].astype(object)),
        TypeError,
        r"y must hold numeric labels \(got dtype object",
    ),
    _row(
        "numpy-string-array",
        lambda: mo.Quadratic(np.eye(2), np.array(["1", "2"])),
        TypeError,
        r"b must be a real numeric array \(got dtype <U1\)",
    ),
    # 3. empty lam
    _row(
        "prox-empty-lam",
        lambda: LOG.prox(np.zeros(3), np.ones((0, 1))),
        ValueError,
        r"lam must not be empty \(got shape \(0, 1\)\)",
    ),
    _row(
        "moreau-prox-empty-lam",
        lambda: mo.prox(LOG, np.zeros(3), np.ones((0, 1))),
        ValueError,
        r"lam must not be empty \(got shape \(0, 1\)\)",
    ),
    _row(
        "envelope-empty-lam",
        lambda: mo.envelope(LOG, np.ones((0, 1))),
        ValueError,
        r"lam must not be empty \(got shape \(0, 1\)\)",
    ),
    _row(
        "quadratic-prox-empty-lam",
        lambda: mo.Quadratic(np.eye(3), np.ones(3)).prox(np.zeros(3), np.ones((0,))),
        ValueError,
        r"lam must not be empty \(got shape \(0,\)\)",
    ),
    # 3. X so large that its squares overflow (before: a LinAlgError, a ProxConvergenceError "bound nan")
    _row(
        "logistic-X-1e200",
        lambda: mo.Logistic(X * 1e200, YPM),
        ValueError,
        r"X is too large for float64: its largest row norm .*e\+200 exceeds .*e\+154",
    ),
    _row(
        "multinomial-X-1e200",
        lambda: mo.Multinomial(X * 1e200, YC),
        ValueError,
        r"X is too large for float64: its largest row norm",
    ),
    _row(
        "logistic-X-float32",
        lambda: mo.Logistic((X * 1e20).astype(np.float32), YPM),
        ValueError,
        r"X is too large for float32",
    ),
    _row(
        "least-squares-X-1e200",
        lambda: mo.LeastSquares(X * 1e200, YPM),
        ValueError,
        r"X is too large for float64: A = X\^T W X / sum w \+ mu I overflows",
    ),
    _row(
        "least-squares-y-1e200",
        lambda: mo.LeastSquares(X, YPM * 1e200),
        ValueError,
        r"y is too large for float64: c = .* overflows",
    ),
    _row(
        "logistic-mu-plus-curvature",
        lambda: mo.Logistic(X * 1e153, YPM, mu=1.79e308),
        ValueError,
        r"mu=1.79e\+308 plus the curvature bound of X .* overflows float64",
    ),
    _row(
        "prox-modulus-overflows",
        lambda: mo.Logistic(X, YPM, mu=1e308).prox(np.zeros(3), 1e308),
        ValueError,
        r"lam=1e\+308 plus the curvature lower bound 1e\+308 .* overflows float64",
    ),
    _row(
        "quadratic-prox-modulus-overflows",
        lambda: mo.Quadratic(np.eye(3) * 1e308, np.ones(3)).prox(np.ones(3), 1e308, return_info=True),
        ValueError,
        r"lam=1e\+308 plus lambda_min\(A\) >= .* overflows float64",
    ),
    # 3. fedprox_optimum with a lam whose system overflows (before: a raw LinAlgError)
    _row(
        "fedprox-optimum-quadratic-lam-1e308",
        lambda: fl.fedprox_optimum(LS, 1e308),
        ValueError,
        r"lam=1e\+308 is too large: the FedProx system overflows float64.*lam must be below",
    ),
    _row(
        "fedprox-optimum-certified-lam-1e308",
        lambda: fl.fedprox_optimum(LS, 1e308, return_info=True),
        ValueError,
        r"lam=1e\+308 is too large",
    ),
    _row(
        "fedprox-optimum-logistic-lam-1e307",
        lambda: fl.fedprox_optimum(mo.Logistic(X, YPM, mu=0.1), 1e307),
        ValueError,
        r"lam=1e\+307 is too large for float64: the certificate's scale lam / mu",
    ),
    # 3. divergence reported as such (before: "theta must be finite")
    _row(
        "gd-diverges",
        lambda: fl.gd(LS, eta=100.0, steps=2000),
        ValueError,
        r"gd diverged: the iterates overflowed to inf or NaN at step \d+ of 2000; the step size eta is "
        r"likely too large .*2/L",
    ),
    _row(
        "fedavg-diverges",
        lambda: fl.fedavg(LS, eta=100.0, tau=2, rounds=1000),
        ValueError,
        r"fedavg diverged: .* at round \d+, local step \d; the step size eta is likely too large",
    ),
    _row(
        "fedprox-diverges",
        lambda: fl.fedprox(LS, lam=1.0, gamma=0.5, eta=100.0, K=2, rounds=1000),
        ValueError,
        r"fedprox diverged: .* at round \d+, local step \d; the step size eta \(with lam\)",
    ),
    _row(
        "pfedme-diverges",
        lambda: fl.pfedme(LS, lam=1.0, eta=100.0, beta=1.0, R=2, rounds=1000),
        ValueError,
        r"pfedme diverged: .* the step size eta \(times lam\) is likely too large",
    ),
    _row(
        "per-fedavg-diverges",
        lambda: fl.per_fedavg(LS, alpha=0.1, beta=100.0, tau=2, rounds=1000),
        ValueError,
        r"per_fedavg diverged: .* the step size beta \(or alpha\) is likely too large",
    ),
    # 3. a negative seed: our own message (before: numpy's "expected non-negative integer")
    _row(
        "fedavg-negative-seed",
        lambda: fl.fedavg(LS, eta=0.1, tau=2, rounds=2, S=2, rng=-5),
        ValueError,
        r"rng must be a numpy.random.Generator or a non-negative int seed \(got -5\)",
    ),
    _row(
        "fedavg-negative-seed-unused",
        lambda: fl.fedavg(LS, eta=0.1, tau=2, rounds=2, rng=-5),
        ValueError,
        r"rng must be .* non-negative int seed \(got -5\)",
    ),
    _row(
        "pfedme-negative-seed",
        lambda: fl.pfedme(LS, lam=1.0, eta=0.1, beta=1.0, R=2, rounds=2, S=2, rng=-5),
        ValueError,
        r"rng must be .* non-negative int seed \(got -5\)",
    ),
    # 3. generators: the memory estimated first (before: a 74.5 GiB allocation attempt)
    _row(
        "least-squares-data-too-large",
        lambda: data.least_squares(0, m=10**6, n=10**4, d=100, R=1.0),
        ValueError,
        r"least_squares\(m=1000000, n=10000, d=100, trials=\(\)\) would allocate about .*TiB.*above max_bytes = "
        r"8 GiB: lower m, n, d or trials",
    ),
    _row(
        "least-squares-data-trials",
        lambda: data.least_squares(0, m=10, n=100, d=10, R=1.0, trials=10**5),
        ValueError,
        r"trials=\(100000,\)\) would allocate about .*GiB",
    ),
    _row(
        "least-squares-data-max-bytes",
        lambda: data.least_squares(0, m=2, n=4, d=2, R=1.0, max_bytes=10),
        ValueError,
        r"above max_bytes = 10 bytes",
    ),
    _row(
        "logistic-data-too-large",
        lambda: data.logistic(0, m=10**6, n=10**4, d=100, R=1.0, mu=0.1),
        ValueError,
        r"logistic\(m=1000000, n=10000, d=100, trials=\(\)\) would allocate about .*TiB.*lower m, n, d or trials",
    ),
]


@pytest.mark.parametrize("call, exc, match", CASES)
def test_bad_input_is_a_clear_error(call, exc, match):
    with np.errstate(all="ignore"), pytest.raises(exc, match=match) as info:
        call()
    assert "\n" not in str(info.value)  # one line


def test_weights_that_overflow_never_leave_a_small_certificate():
    """The fault itself: weights 1e308 made the data term drop out (the prox off by 0.31) while
    error_bound certified 2e-16.  Now refused; the same ratios at a sane scale give the prox of
    the unweighted objective."""
    w = RNG.standard_normal((4, 3))
    with pytest.raises(ValueError, match="weights"):
        mo.Logistic(X, YPM, weights=HUGE_W)
    scaled = mo.Logistic(X, YPM, weights=np.full((4, 6), 1e300))
    theta, info = scaled.prox(w, 1.0, return_info=True)
    ref = mo.Logistic(X, YPM).prox(w, 1.0)
    assert np.all(np.linalg.norm(theta - ref, axis=-1) <= info.error_bound + 1e-15)


def test_default_labels_are_unchanged():
    """The label checks refuse only bad labels: {0, 1} and {-1, +1} still build."""
    assert mo.Multinomial(X[0], YC[0]).n_classes == 3
    assert mo.Multinomial(X[0], YC[0], n_classes=5).n_classes == 5
    assert mo.Logistic(X[0], (YPM[0] > 0).astype(int)).dim == 3


def test_ball_certificate_refuses_an_overflowed_discriminant():
    """``_ball``: an overflowed ``m^2`` (inf) once gave the radius 2G / inf = 0, a zero
    certificate; rho = inf (a Hessian Lipschitz constant that overflowed) and rho G = inf * 0
    (NaN) likewise certify nothing: the radius is inf."""
    from moreau._newton_steps import _ball

    G = np.array([1e-3, 1e-3, 0.0, 1e-3])
    m = np.array([1e200, 1.0, 1.0, np.nan])
    rho = np.array([1.0, np.inf, np.inf, 1.0])
    with np.errstate(all="ignore"):
        r = _ball(np, G, m, rho)
    assert np.all(r == np.inf), r
    ok = _ball(np, np.array([1e-3]), np.array([2.0]), np.array([1.0]))
    assert 0 < ok[0] < 1e-3  # a finite discriminant still certifies (G / m = 5e-4 <= r)


def test_a_nan_bound_reads_inf():
    """ProxInfo: a NaN bound (an overflow in its arithmetic) is stored as inf, so that no
    comparison with a tolerance can pass it."""
    info = mo.ProxInfo(iterations=np.zeros(2, dtype=int), error_bound=np.array([1e-16, np.nan]), tol=None)
    assert info.error_bound[0] == 1e-16 and info.error_bound[1] == np.inf


def test_quadratic_certificate_of_an_overflowed_theta_is_inf():
    """The closed form's certificate: a theta with an inf entry has an inf bound, and with a
    tolerance it raises instead of passing the comparison (NaN > tol is False)."""
    from moreau._quadratic_cert import certificate

    q = mo.Quadratic(np.eye(3), np.ones(3))
    theta = np.array([np.inf, 0.0, 0.0])
    with np.errstate(all="ignore"):
        info = certificate(q, theta.copy(), np.zeros(3), np.asarray(1.0), (), None, np.asarray(1.0))
        assert info.error_bound == np.inf
        with pytest.raises(mo.ProxConvergenceError):
            certificate(q, theta.copy(), np.zeros(3), np.asarray(1.0), (), 1e-3, np.asarray(1.0))


def test_envelope_certificate_of_an_infinite_modulus_is_inf():
    """moreau.fl: an overflowed modulus (inf) once made the scale lam / mu_lo zero, hence a
    zero bound; now the bound is inf there (and finite elsewhere)."""
    from moreau.fl._newton import envelope_certificate

    f = LS
    p = np.full((4,), 0.25)
    w = np.zeros(3)
    theta = f.prox(np.broadcast_to(w, (4, 3)), 1.0)
    e = np.zeros(4)
    for mu_lo, finite in ((np.asarray(np.inf), False), (np.asarray(0.5), True)):
        bound, _ = envelope_certificate(f, p, np.asarray(1.0), w, theta, e, mu_lo)
        assert bool(np.isfinite(bound)) == finite


def test_minimize_never_settles_an_infinite_bound():
    """moreau.fl's Newton: a bound that is inf or NaN (an overflow) is never taken as converged,
    even where the tolerance is inf too."""
    from moreau.fl._newton import minimize

    def state(w):
        return (np.sum(w * w, axis=-1), 2 * w, np.array([np.nan, np.inf]), np.array([1.0, np.inf]), None)

    with np.errstate(invalid="ignore"), pytest.raises(RuntimeError, match="did not certify"):
        minimize(
            state,
            lambda w, aux: np.broadcast_to(2 * np.eye(2), (2, 2, 2)),
            np.ones((2, 2)),
            np.float64,
            xp=np,
            max_iter=2,
        )


class _OverflowingRounding(mo.Objective):
    """f(theta) = ||theta||^2 / 2 whose gradient-rounding bound overflows (inf): the stand-in for
    any certificate ingredient that overflowed."""

    xp, dtype, dim, batch_shape = array_namespace(np.zeros(0)), np.float64, 2, (2,)

    def value(self, theta):
        return 0.5 * np.sum(self._point(theta) ** 2, axis=-1)

    def grad(self, theta):
        return np.array(self._point(theta))

    def hess(self, theta):
        return np.broadcast_to(np.eye(2), np.shape(theta)[:-1] + (2, 2))

    def curvature_bounds(self):
        return np.ones(2), np.ones(2)

    def _grad_rounding(self, theta):
        return np.full(np.shape(theta)[:-1], np.inf)


def test_newton_never_returns_an_infinite_certificate():
    """Newton: an overflowed certificate (inf) once passed its own default level (inf <= inf) and
    came back as a result; now the entries are reported as not certified."""
    with (
        np.errstate(invalid="ignore"),
        pytest.raises(mo.ProxConvergenceError, match="the certificate overflowed") as info,
    ):
        mo.prox(_OverflowingRounding(), np.ones((2, 2)), 1.0, return_info=True)
    assert np.all(info.value.failed) and np.all(info.value.error_bound == np.inf)
