"""moreau.fl FedFW: the Federated Frank-Wolfe algorithm (Dadras thesis §4.3, eqs. (4.4)-(4.6)), its LMOs
and its exact targets.

The LMOs against the enumerated vertices of each polytope (and the closed form of the ball); the batched
run against a plain loop over trials and clients written here from (4.5)-(4.6) with scalar oracles
(identical iterates, stochastic draws replayed); the exact targets against scipy.optimize (L-BFGS-B with
bounds, trust-constr) and against the enumeration of the box's 3^d faces; bad arguments in one table.

Tolerances (``_tol.assert_close``, 100 eps relative): ``factor=10`` for the loop against the batched run
(the same operations, summed in another order); scipy's solvers stop at their own tolerances (1e-7
relative, commented where used).
"""

import itertools
import math

import numpy as np
import pytest
from _tol import assert_close, host
from array_api_compat import array_namespace
from scipy.optimize import Bounds, minimize

import moreau as mo
from moreau.fl._fedfw import fedfw, fedfw_optimum, schedules
from moreau.fl._lmo import Box, L1Ball, L2Ball, Simplex

SETS = {
    "box": lambda T, d, rng: Box(-rng.uniform(0.5, 2, (T, d)), rng.uniform(0.5, 2, (T, d))),
    "l1": lambda T, d, rng: L1Ball(rng.uniform(0.5, 2, T)),
    "l2": lambda T, d, rng: L2Ball(rng.uniform(0.5, 2, T)),
    "simplex": lambda T, d, rng: Simplex(rng.uniform(0.5, 2, T)),
}


def _clients(seed, T=3, m=4, d=3, convex=True):
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((T, m, d, d))
    A = M @ np.swapaxes(M, -1, -2) / d + (0.1 if convex else -1.0) * np.eye(d)
    A = (A + np.swapaxes(A, -1, -2)) / 2
    b = rng.standard_normal((T, m, d)) * 3
    return A, b, mo.Quadratic(A, b)


def _vertices(C, t, d):
    if isinstance(C, Box):
        return np.array([np.where(s, C.hi[t], C.lo[t]) for s in itertools.product((0, 1), repeat=d)])
    r = C.r[t]
    E = np.eye(d) * r
    return np.concatenate([E, -E]) if isinstance(C, L1Ball) else E


def _lmo_scalar(C, t, g):
    """The oracle of one instance, written plainly: the best vertex (polytopes), -r g/|g| (ball)."""
    if isinstance(C, L2Ball):
        n = np.linalg.norm(g)
        return -C.r[t] * g / n if n > 0 else np.zeros_like(g)
    V = _vertices(C, t, g.size)
    return V[np.argmin(V @ g)]


# --- the oracles ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SETS))
def test_lmo_minimises_the_linear_function_over_the_set(name):
    rng = np.random.default_rng(1)
    T, d = 6, 4
    C = SETS[name](T, d, rng)
    g = rng.standard_normal((T, d))
    s = C.lmo(g)
    assert np.all(C.contains(s))
    for t in range(T):
        if name == "l2":  # the closed form: <g, s> = -r |g|, |s| = r
            assert np.dot(g[t], s[t]) == pytest.approx(-C.r[t] * np.linalg.norm(g[t]), rel=1e-14)
        else:
            assert np.dot(g[t], s[t]) == pytest.approx(np.min(_vertices(C, t, d) @ g[t]), rel=1e-14)
    u = np.stack([C.lmo(rng.standard_normal((T, d))) * rng.uniform(0, 1, (T, 1)) for _ in range(20)])
    if name != "simplex":  # scaled extreme points of a set containing 0: feasible points; none beats s
        assert np.all(np.einsum("ktd,td->kt", u, g) >= np.sum(g * s, axis=-1) - 1e-12)
    assert_close(C.gap(np.zeros((T, d)), g), -np.sum(g * s, axis=-1))


@pytest.mark.parametrize("name", list(SETS))
def test_lmo_at_a_zero_gradient_is_a_point_of_the_set(name):
    C = SETS[name](2, 3, np.random.default_rng(2))
    s = C.lmo(np.zeros((2, 3)))
    assert np.all(np.isfinite(s)) and np.all(C.contains(s))


def test_sparse_sets_return_one_nonzero_and_the_others_are_dense():
    rng = np.random.default_rng(3)
    g = rng.standard_normal((5, 7))
    for name, nnz in (("l1", 1), ("simplex", 1), ("l2", 7), ("box", 7)):
        C = SETS[name](5, 7, rng)
        assert np.all(np.count_nonzero(C.lmo(g), axis=-1) == nnz)
        assert C.sparse_vertices == (nnz == 1)


def test_client_axis_shares_each_trials_set():
    rng = np.random.default_rng(4)
    C = L1Ball(np.array([0.5, 2.0]))
    g = rng.standard_normal((2, 3, 4))
    s = C.lmo(g, clients=True)
    for t in range(2):
        assert_close(s[t], L1Ball(C.r[t]).lmo(g[t]))


# --- the algorithm against a loop --------------------------------------------------------------


def _loop(A, b, C, rounds, lam_t, eta_t, noise=None, rho_t=None):
    """(4.5)-(4.6) per trial and client; the server's x̄ from the directions; optional momentum."""
    T, m, d = b.shape
    xbar = np.stack([C.center(d)[t] if np.ndim(C.center(d)) > 1 else C.center(d) for t in range(T)])
    X = np.repeat(xbar[:, None], m, axis=1)
    mom = np.zeros_like(X)
    out = [xbar.copy()]
    for k in range(rounds):
        S = np.zeros_like(X)
        for t in range(T):
            for i in range(m):
                g = A[t, i] @ X[t, i] - b[t, i]
                if noise is not None:
                    g = g + noise[k][t, i]
                if rho_t is not None:
                    mom[t, i] = g if k == 0 else (1 - rho_t[k]) * mom[t, i] + rho_t[k] * g
                    g = mom[t, i]
                S[t, i] = _lmo_scalar(C, t, g / m + lam_t[k][t] * (X[t, i] - xbar[t]))
        X = (1 - eta_t[k]) * X + eta_t[k] * S
        xbar = (1 - eta_t[k]) * xbar + eta_t[k] * S.mean(axis=1)
        out.append(xbar.copy())
    return np.array(out), X


@pytest.mark.parametrize("name", list(SETS))
@pytest.mark.parametrize("schedule", ["sqrt", "constant", "horizon"])
def test_fedfw_equals_a_loop_over_trials_and_clients(name, schedule):
    A, b, f = _clients(5)
    C = SETS[name](3, 3, np.random.default_rng(6))
    R, lam0 = 40, np.array([0.3, 1.0, 3.0])
    kw = {"lam": lam0} if schedule == "constant" else {"lam0": lam0}
    h = fedfw(f, C, rounds=R, lam_schedule=schedule, **kw)
    t = np.arange(1, R + 1)
    c = {"sqrt": np.sqrt(t + 1), "constant": np.ones(R), "horizon": np.full(R, R ** (1 / 3))}[schedule]
    eta = np.full(R, R ** (-2 / 3)) if schedule == "horizon" else 2 / (t + 1)
    xs, X = _loop(A, b, C, R, c[:, None] * lam0, eta)
    assert_close(h.w_global, xs, factor=10)
    assert_close(h.w_local[-1], X, factor=10)
    assert_close(h.w_global, np.mean(host(h.w_local), axis=-2), factor=10)  # x̄ from the directions = the mean
    assert np.all(h.nnz == np.count_nonzero(host(h.directions), axis=-1))
    assert h.rounds == R and h.grad_evals == R and host(h.w_global).shape == (R + 1, 3, 3)


class _Normals(np.random.Generator):
    """A Generator that records its standard_normal draws (to replay them in the loop)."""

    def __init__(self, seed):
        super().__init__(np.random.PCG64(seed))
        self.log = []

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        x = super().standard_normal(size, dtype=dtype, out=out)
        self.log.append(np.array(x))
        return x


def test_stochastic_fedfw_equals_the_loop_on_the_same_draws():
    A, b, f = _clients(7)
    C = SETS["l1"](3, 3, np.random.default_rng(8))
    R, sigma = 30, np.array([0.5, 1.0, 2.0])
    rng = _Normals(9)
    h = fedfw(f, C, rounds=R, stochastic=True, sigma=sigma, rng=rng, lam0=1.0)
    lam, eta, rho = schedules(R, stochastic=True)
    assert eta[0] == 1.0 and rho[0] == 1.0 and lam[0] == 3.0  # 9/(1+8), 4/(1+7)^(2/3), sqrt(1+8)
    noise = [x * sigma[:, None, None] / np.sqrt(3) for x in rng.log]
    xs, X = _loop(A, b, C, R, lam[:, None] * np.ones(3), eta, noise=noise, rho_t=rho)
    assert_close(h.w_global, xs, factor=10)
    assert_close(h.w_local[-1], X, factor=10)


def test_a_minibatch_of_every_sample_is_the_full_gradient():
    rng = np.random.default_rng(10)
    f = mo.LeastSquares(rng.standard_normal((2, 3, 6, 3)), rng.standard_normal((2, 3, 6)), mu=0.1)
    C = L2Ball(1.0)
    exact = fedfw(f, C, rounds=25)
    sampled = fedfw(f, C, rounds=25, batch_size=6, rng=0)
    assert_close(sampled.w_local, exact.w_local, factor=10)


def test_schedules_are_the_printed_ones():
    """Deterministic: c_t = sqrt(t+1), eta_t = 2/(t+1), no rho (thesis (4.5)-(4.6)); stochastic (the authors'
    ``FedFW_sto``): c_t = sqrt(t+8), eta_t = 9/(t+8), rho_t = 4/(t+7)^(2/3); horizon: c_t = T^(1/3),
    eta_t = T^(-2/3); rounds t = 1..T."""
    t = [1, 2, 3, 4, 5]
    c, e, r = schedules(5)
    assert_close(c, np.array([math.sqrt(k + 1) for k in t]))
    assert r is None
    assert_close(e, np.array([2 / (k + 1) for k in t]))
    assert e[0] == 1.0  # t starts at 1: the first step lands on s^1 in D
    c, e, r = schedules(5, stochastic=True)
    assert_close(c, np.array([3.0, math.sqrt(10), math.sqrt(11), math.sqrt(12), math.sqrt(13)]))
    assert_close(e, np.array([1.0, 0.9, 9 / 11, 0.75, 9 / 13]))
    assert_close(r, np.array([4 / (k + 7) ** (2 / 3) for k in t]))
    assert c[0] == 3.0 and e[0] == 1.0 and r[0] == pytest.approx(1.0, rel=1e-15)  # 4 / 8^(2/3) = 1
    c, e, r = schedules(8, lam_schedule="horizon")
    assert_close(c, np.full(8, 2.0))  # 8^(1/3)
    assert_close(e, np.full(8, 0.25))  # 8^(-2/3)
    assert r is None
    c, e, r = schedules(8, lam_schedule="horizon", stochastic=True)
    assert_close(c, np.full(8, 2.0))
    assert_close(e, np.full(8, 0.25))
    assert_close(r, np.array([4 / (k + 7) ** (2 / 3) for k in range(1, 9)]))
    c, e, r = schedules(5, lam_schedule="constant")
    assert c is None and r is None
    assert_close(e, np.array([2 / (k + 1) for k in t]))


# --- the targets --------------------------------------------------------------------------------


def _F(A, b, x):
    return np.mean(
        0.5 * np.einsum("...i,...mij,...j->...m", x, A, x) - np.einsum("...mi,...i->...m", b, x), axis=-1
    )


def test_constrained_optimum_matches_scipy_and_the_face_enumeration():
    A, b, f = _clients(11, T=4, m=3, d=3)
    rng = np.random.default_rng(12)
    h = rng.uniform(0.3, 1.0, (4, 3))
    tg = fedfw_optimum(f, Box(-h, h))
    for t in range(4):
        H, c = A[t].mean(0), b[t].mean(0)
        res = minimize(
            lambda x, H=H, c=c: 0.5 * x @ H @ x - c @ x,
            np.zeros(3),
            jac=lambda x, H=H, c=c: H @ x - c,
            method="L-BFGS-B",
            bounds=list(zip(-h[t], h[t], strict=True)),
            options={"ftol": 1e-15, "gtol": 1e-13},
        )
        np.testing.assert_allclose(host(tg.x)[t], res.x, atol=1e-6)  # L-BFGS-B stops near 1e-7
        best = np.inf  # every face: coordinates at -h, free, or +h; the free block's stationary point
        for pat in itertools.product((-1, 0, 1), repeat=3):
            free = np.array(pat) == 0
            x = np.array(pat, float) * h[t]
            if free.any():
                x[free] = np.linalg.solve(H[np.ix_(free, free)], c[free] - H[np.ix_(free, ~free)] @ x[~free])
            if np.all(np.abs(x) <= h[t] + 1e-12):
                best = min(best, 0.5 * x @ H @ x - c @ x)
        assert tg.value[t] == pytest.approx(best, rel=1e-12, abs=1e-14)
    assert np.all(tg.gap <= 1e-12) and np.all(tg.kkt <= 1e-12)


def test_penalised_optimum_matches_trust_constr():
    A, b, f = _clients(13, T=2, m=3, d=2)
    h = np.array([[0.5, 0.8], [1.0, 0.4]])
    lam = np.array([0.7, 3.0])
    tg = fedfw_optimum(f, Box(-h, h), lam=lam)
    for t in range(2):

        def phi(z, t=t):
            X = z.reshape(3, 2)
            return np.mean(
                [0.5 * x @ Ai @ x - bi @ x for x, Ai, bi in zip(X, A[t], b[t], strict=True)]
            ) + lam[t] / 2 * np.sum((X - X.mean(0)) ** 2)

        lo, hi = np.tile(-h[t], 3), np.tile(h[t], 3)
        res = minimize(
            phi,
            np.zeros(6),
            method="trust-constr",
            bounds=Bounds(lo, hi),
            options={"gtol": 1e-12, "xtol": 1e-14, "maxiter": 5000},
        )
        assert tg.value[t] <= res.fun + 1e-12  # the active-set optimum is at least as good
        np.testing.assert_allclose(host(tg.X)[t].ravel(), res.x, atol=1e-5)  # trust-constr's interior path
    assert np.all(tg.gap <= 1e-12)


def test_the_certificate_bounds_the_suboptimality_of_feasible_points():
    A, b, f = _clients(14, T=3, m=4, d=3)
    h = np.full((3, 3), 0.7)
    tg = fedfw_optimum(f, Box(-h, h))
    rng = np.random.default_rng(15)
    g = np.einsum("tmij,tj->tmi", A, host(tg.x)).mean(1) - b.mean(1)
    for _ in range(20):  # F(y) - F* <= gap(y) at feasible points y (convexity), 0 <= F(y) - F*
        y = np.clip(host(tg.x) + 0.3 * rng.standard_normal((3, 3)), -h, h)
        gy = np.einsum("tmij,tj->tmi", A, y).mean(1) - b.mean(1)
        sub = _F(A, b, y) - tg.value
        assert np.all(sub >= -1e-13) and np.all(sub <= Box(-h, h).gap(y, gy) + 1e-13)
    assert np.all(Box(-h, h).gap(host(tg.x), g) <= 1e-12)


def test_fedfw_reaches_its_targets():
    """A fixed λ: Frank-Wolfe on the penalised objective, within Theorem 5's 2 L_Φ diam²/(k+2); the growing
    λ_t = λ0 sqrt(t+1): the constrained optimum of (4.4)."""
    A, b, f = _clients(16, T=3, m=4, d=3)
    h = np.full((3, 3), 1.0)
    C = Box(-h, h)
    lam = 2.0
    tp = fedfw_optimum(f, C, lam=lam)
    run = fedfw(f, C, rounds=2000, lam_schedule="constant", lam=lam)
    X = host(run.w_local[-1])
    phi = np.mean(
        0.5 * np.einsum("tmi,tmij,tmj->tm", X, A, X) - np.einsum("tmi,tmi->tm", X, b), -1
    ) + lam / 2 * np.sum((X - X.mean(1, keepdims=True)) ** 2, axis=(1, 2))
    L = np.max(np.abs(np.linalg.eigvalsh(A)))
    assert np.all(phi - tp.value <= 2 * (L + 4 * lam) * (2 * np.sqrt(3)) ** 2 / 2001) and np.all(
        phi >= tp.value
    )
    star = fedfw_optimum(f, C)
    grow = fedfw(f, C, rounds=3000)
    e = _F(A, b, host(grow.w_global)) - star.value
    assert np.all(e[-1] < e[200] / 3) and np.all(e >= -1e-12)  # x̄^t stays in D: F(x̄^t) >= F*


# the xp tests compare a run on another array namespace with the numpy run (the reference, checked against
# plain loops above); numpy against itself could not fail, so they run on the other backends only
ON_OTHER_BACKENDS = pytest.mark.parametrize(
    "xp", ["array_api_strict", pytest.param("cupy", marks=pytest.mark.gpu)], indirect=True
)


@ON_OTHER_BACKENDS
def test_fedfw_runs_on_every_backend(xp):
    A, b, _ = _clients(17)
    f = mo.Quadratic(xp.asarray(A), xp.asarray(b))
    ns = array_namespace(xp.asarray(A))
    ref = fedfw(mo.Quadratic(A, b), L1Ball(1.0), rounds=20)
    h = fedfw(f, L1Ball(1.0), rounds=20)
    for name in ("w_global", "w_local", "directions"):  # in the input's namespace (nnz: host, documented)
        assert array_namespace(getattr(h, name)) is ns, name
        assert_close(getattr(h, name), getattr(ref, name), factor=10, err_msg=name)
    box = Box(-np.ones(3), np.ones(3))
    tg, tg_ref = fedfw_optimum(f, box), fedfw_optimum(mo.Quadratic(A, b), box)
    assert array_namespace(tg.x) is ns and array_namespace(tg.X) is ns
    assert_close(tg.x, tg_ref.x)
    assert_close(tg.X, tg_ref.X)


def test_float32_stays_float32():
    A, b, _ = _clients(18)
    h = fedfw(mo.Quadratic(A.astype(np.float32), b.astype(np.float32)), L2Ball(1.0), rounds=5)
    assert host(h.w_global).dtype == np.float32 and host(h.directions).dtype == np.float32


# --- bad arguments -----------------------------------------------------------------------------

_A, _B, _F3 = _clients(19)
_BOX = Box(-np.ones(3), np.ones(3))
BAD = [
    ("constraint not a set", lambda: fedfw(_F3, "l1", rounds=3), TypeError, "Box, L1Ball"),
    (
        "box of the wrong dimension",
        lambda: fedfw(_F3, Box(-np.ones(2), np.ones(2)), rounds=3),
        ValueError,
        "d = 3",
    ),
    ("rounds 0", lambda: fedfw(_F3, _BOX, rounds=0), ValueError, "rounds must be >= 1"),
    (
        "unknown schedule",
        lambda: fedfw(_F3, _BOX, rounds=3, lam_schedule="log"),
        ValueError,
        "lam_schedule must be",
    ),
    (
        "constant without lam",
        lambda: fedfw(_F3, _BOX, rounds=3, lam_schedule="constant"),
        ValueError,
        "needs lam",
    ),
    ("lam with a growing schedule", lambda: fedfw(_F3, _BOX, rounds=3, lam=1.0), ValueError, "fixed penalty"),
    (
        "lam0 with constant",
        lambda: fedfw(_F3, _BOX, rounds=3, lam_schedule="constant", lam=1.0, lam0=2.0),
        ValueError,
        "takes lam",
    ),
    ("negative lam0", lambda: fedfw(_F3, _BOX, rounds=3, lam0=-1.0), ValueError, "lam0 must be"),
    (
        "eta of the wrong length",
        lambda: fedfw(_F3, _BOX, rounds=3, eta=[0.5, 0.5]),
        ValueError,
        "shape \\(3,\\)",
    ),
    ("eta above 1", lambda: fedfw(_F3, _BOX, rounds=2, eta=[1.0, 1.5]), ValueError, "eta values must be in"),
    (
        "rho without stochastic",
        lambda: fedfw(_F3, _BOX, rounds=2, rho=[1.0, 0.5]),
        ValueError,
        "stochastic=True",
    ),
    ("stochastic not a bool", lambda: fedfw(_F3, _BOX, rounds=2, stochastic=1), TypeError, "True or False"),
    ("sigma without rng", lambda: fedfw(_F3, _BOX, rounds=2, sigma=1.0), ValueError, "rng is required"),
    ("negative sigma", lambda: fedfw(_F3, _BOX, rounds=2, sigma=-1.0, rng=0), ValueError, "sigma must be"),
    (
        "batch_size on a quadratic",
        lambda: fedfw(_F3, _BOX, rounds=2, batch_size=2, rng=0),
        TypeError,
        "with_weights",
    ),
    ("box lo > hi", lambda: Box(np.ones(3), -np.ones(3)), ValueError, "lo must be <= hi"),
    ("radius 0", lambda: L1Ball(0.0), ValueError, "r must be finite and > 0"),
    (
        "optimum over a simplex",
        lambda: fedfw_optimum(_F3, Simplex(1.0)),
        TypeError,
        "Box, an L1Ball or an L2Ball",
    ),
    (
        "optimum of nonconvex clients",
        lambda: fedfw_optimum(_clients(20, convex=False)[2], _BOX),
        ValueError,
        "convex clients",
    ),
    (
        "optimum of logistic clients",
        lambda: fedfw_optimum(mo.Logistic(np.ones((1, 2, 3, 3)), np.ones((1, 2, 3))), _BOX),
        TypeError,
        "quadratic clients",
    ),
]


@pytest.mark.parametrize("call, error, match", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_arguments_name_what_was_expected(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_a_truncated_active_set_solve_still_reports_its_suboptimality():
    """max_iter=1 stops the active sets early (then projected gradient and one more pass): whatever the
    point, value - F* <= gap, the certificate it returns."""
    A, b, f = _clients(21, T=5, m=4, d=4)
    C = Box(-np.full((5, 4), 0.4), np.full((5, 4), 0.6))
    exact_, rough = fedfw_optimum(f, C), fedfw_optimum(f, C, max_iter=1)
    assert np.all(rough.value - exact_.value <= rough.gap + 1e-13) and np.all(
        rough.value >= exact_.value - 1e-13
    )
    assert np.all(exact_.gap <= 1e-12)
