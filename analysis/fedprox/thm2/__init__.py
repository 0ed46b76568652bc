r"""fedprox.thm2 — FedProx analysis (Yu, He, Sun, Xue, Li), Theorem 2, condition (12).

Statement (paper): under Assumptions 2 (each L_i μ-strongly convex) and 4 (ℓ(·, z) L-smooth),
Algorithm 1 (one-stage FedProx: per round K warm-started gradient steps of size η on
h_i(·, w_t⁽ᵍ⁾) = L_i + (λ/2)‖· − w_t⁽ᵍ⁾‖², then w_{t+1}⁽ᵍ⁾ = w_t⁽ᵍ⁾ − (γ/m)Σ_i λ(w_t⁽ᵍ⁾ − w_{t,K}⁽ⁱ⁾))
with γ < 1/L_g, η ≤ 1/L_ℓ and

    (2 + 64 L_w² (1/μ_g)² λ²)(1 − ημ_ℓ)^K ≤ (1 − γL_g)⁴                               (12)

converges linearly: w_t⁽ᵍ⁾ → w̃⁽ᵍ⁾ and w_{t,0}⁽ⁱ⁾ → w̃⁽ⁱ⁾ "at rate ρ = 1 − γμ_g/2 − (γμ_g)²/2",
(w̃⁽ᵍ⁾, w̃⁽ⁱ⁾) the FedProx optimum, μ_g, L_g, μ_ℓ, L_ℓ, L_w Lemma 2's constants.  The main text
does not say whether ρ contracts the distance or the squared distance, and the appendix (B.3,
B.5) is not in the text.  ρ = (1 + γμ_g/2)(1 − γμ_g) is what the usual squared-distance proof
gives (‖x − γ∇F(x) − x̃‖² ≤ (1 − γμ_g)‖x − x̃‖² for γ ≤ 1/L_g, then Young's inequality with
weight γμ_g/2 for the inexact gradient): the squared reading is the proof's.  Both are checked.

Assumptions: μ > 0; λ > 0; γ < 1/L_g; η ≤ 1/L_ℓ; K satisfying (12).  Here
L_w²λ²/μ_g² = λ²/μ², so (12) is (2 + 64λ²/μ²)(1 − ημ_ℓ)^K ≤ (1 − γL_g)⁴ and its smallest K is
K_min = ⌈log((2 + 64λ²/μ²)/(1 − γL_g)⁴) / −log(1 − ημ_ℓ)⌉ (``moreau.analysis.fedprox.round_matrix.k_min``).

Constants: μ = the smallest eigenvalue over the clients' A_i, L = the largest (exact, from the
constructed spectra); Lemma 2's constants from them (fedprox.lemma2 shows they are exact).

Instances (quadratic, m = 3 clients, d = 3, p_i = 1/m as in Algorithm 1): κ = L/μ in
[1.2, 50], λ/μ in [0.01, 100], η = v/L_ℓ (v ∈ [0.2, 1], v = 1 on a third), and γ drawn so
that the group's K (2, 8, 32, 128) is exactly K_min (the smallest K (12) allows: the hardest
case).  Half share the eigenvectors of every client with a_1 = μ and a_d = L on the same
directions (then ∇²F has the eigenvalues μ_g and L_g: the worst case of Lemma 2); the other
half have random eigenvectors per client.  Outside the assumptions (not applicable, shown in
the note): K below K_min (γ above the band of its K, or η = v/L_ℓ with v ∈ [0.01, 0.05]);
γ ∈ (1.3/L_g, 1.9/L_g) with K satisfying (12) for |1 − γL_g|.  Logistic (m = 3, d = 3, n = 20,
ridge μ in [0.2, 1], on every other instance carried by half of each client's samples (2μ each, the
other samples ridge-free: convex, not strongly convex sample losses, L_i still μ-strongly convex),
μ the ridge and L = max_i λ_max(X_iᵀX_i)/(4n) + μ, both exact extremes of
the curvature; K = K_min; ``moreau.analysis.fedprox.thm2.logistic``): the exact local rate is the
spectral radius of the round matrix with A_i = ∇²L_i(w̃⁽ⁱ⁾), checked against the simulated
contraction from the optimum plus 1e-5 times its dominant eigenvector.

Sides, per instance: M, the matrix of one round on the errors (``fedprox.round_matrix``), built from
the spectra; its spectral radius sr(M) is the exact asymptotic per-round contraction factor of
the global and the local errors (any norm).  Exact parts: C's simulation (``moreau.fl.fedprox``,
centred at ``moreau.fl.fedprox_optimum``) equals M^t e_0 for t = 1..5, and started from the
dominant eigenvector (real and imaginary parts run separately, z = e_Re + i e_Im) the simulated
errors contract by exactly sr(M) per round: |z_t| = sr^t.  Rate parts (upper bounds):
distance reading sr(M) ≤ ρ; squared-distance reading sr(M)² ≤ ρ.

Claimed by the paper: a rate (an upper bound on the contraction).  What the check shows (default
run, seed 0; numbers in the note): both asymptotic readings hold on every applicable instance of
both families; the distance reading is the stronger one and comes close to ρ (max sr/ρ 0.987 on
quadratics, 0.890 on logistic; sr ≈ 1 − γμ_g, the exact-gradient rate of (10), on the shared
instances, and sr ≤ 1 − γμ_g on 56 % of the applicable quadratic ones).  Read per round, the
claim fails: the worst one-round contraction of the stacked error, ‖M‖₂ in the Euclidean norm,
ranges 0.034 to 1.925 and exceeds ρ on 22 % of the applicable instances (its square on 12 %); for
the global error alone it is unbounded (a start with w⁽ᵍ⁾ = w̃⁽ᵍ⁾ and local errors).  From random
starts the global error's per-round contraction stayed below ρ.  (12) is conservative: the
smallest K with sr(M) ≤ ρ is a median 0.18 (at most 0.50) of K_min.  Below K_min the rate fails:
with η ≤ 0.05/L_ℓ on 4 of 4 quadratic and 2 of 2 logistic instances (one with sr ≥ 1:
divergence), and with γ above the band of its K on 1 of 4; γ ∈ (1.3, 1.9)/L_g breaks it on 7
of 8.
"""

from __future__ import annotations

import numpy as np

import moreau as mo
from moreau.analysis.engine.core import (
    LOGISTIC_SCALING,
    QUADRATIC_SCALING,
    Mutant,
    Sides,
    Statement,
    scale_fields,
)
from moreau.analysis.engine.instances import log_uniform, orthogonal
from moreau.analysis.fedprox.round_matrix import condition_12, lemma2, round_matrix, spectral_radius
from moreau.analysis.fedprox.thm2.logistic import evaluate_logistic, instances_logistic
from moreau.fl import fedprox, fedprox_optimum

__all__ = ["STATEMENTS", "instances", "evaluate"]

CLAIM = {
    "rate": lambda gamma, lam, mu, L: (lambda x: 1 - x / 2 - x**2 / 2)(gamma * lemma2(lam, mu, L)[0]),
    "cond12": lambda lam, mu, L, gamma, eta, K: condition_12(lam, mu, L, gamma, eta, K),
    "steps": lambda lam, mu, L, gamma, eta: (
        (gamma < 1 / lemma2(lam, mu, L)[1]) & (eta <= 1 / lemma2(lam, mu, L)[3])
    ),
}
PARTS = (
    "Algorithm 1 = M^t e_0 (simulation vs matrix)",
    "simulated contraction from the top eigenvector = sr(M)",
    "distance reading: sr(M) <= rho",
    "squared-distance reading: sr(M)^2 <= rho",
)
K_GROUPS, M_CL, DIM, N_SIM = (2, 8, 32, 128), 3, 3, 5
APPLICABLE, BELOW_K, TINY_ETA, BIG_GAMMA = 0, 1, 2, 3


def _draw(rng, n, K, kind):
    """``n`` feasible (L, mu, lam, eta, gamma) for group K; kind as the module constants."""
    c_n = 400 * n
    L = log_uniform(rng, 0.1, 10.0, c_n)
    mu = L / log_uniform(rng, 1.2, 50.0, c_n)
    lam = mu * log_uniform(rng, 0.01, 100.0, c_n)
    v = (
        rng.uniform(0.01, 0.05, c_n)
        if kind == TINY_ETA
        else np.where(rng.uniform(size=c_n) < 1 / 3, 1.0, rng.uniform(0.2, 1.0, c_n))
    )
    _, L_g, mu_l, L_l, _ = lemma2(lam, mu, L)
    eta = v / L_l
    c, q = 2 + 64 * lam**2 / mu**2, 1 - eta * mu_l
    lo, hi = 1 - (c * q ** (K - 1)) ** 0.25, 1 - (c * q**K) ** 0.25  # gamma L_g in (lo, hi]: K_min = K
    u = {
        APPLICABLE: lo + (hi - lo) * rng.uniform(0.02, 0.98, c_n),
        BELOW_K: hi + (1 - hi) * rng.uniform(0.2, 0.9, c_n),
        TINY_ETA: rng.uniform(0.3, 0.9, c_n),
        BIG_GAMMA: rng.uniform(1.3, 1.9, c_n),
    }[kind]
    ok = {
        APPLICABLE: (lo > 0) & (hi < 0.999),
        BELOW_K: (hi > 0) & (hi < 0.999),
        TINY_ETA: u > hi,
        BIG_GAMMA: c * q**K <= (u - 1) ** 4,
    }[kind]
    idx = np.flatnonzero(ok)[:n]
    if idx.size < n:
        raise RuntimeError(f"fedprox.thm2: only {idx.size} of {n} feasible draws for K={K}, kind={kind}")
    return L[idx], mu[idx], lam[idx], eta[idx], u[idx] / L_g[idx]


def _clients(rng, L, mu, shared):
    """A ``(n, m, d, d)``: spectra in [mu, L]; shared: common eigenvectors, a_1 = mu, a_d = L for all."""
    n = L.size
    a = mu[:, None, None] + (L - mu)[:, None, None] * rng.uniform(size=(n, M_CL, DIM))
    a[:, 0, 0], a[:, 1, -1] = mu, L
    a[shared, :, 0], a[shared, :, -1] = mu[shared, None], L[shared, None]
    U = orthogonal(rng, n * M_CL, DIM).reshape(n, M_CL, DIM, DIM)
    U[shared] = U[shared, :1]
    A = (U * a[..., None, :]) @ np.swapaxes(U, -1, -2)
    return (A + np.swapaxes(A, -1, -2)) / 2


def instances(family, trials, rng):
    if family == "logistic":
        return instances_logistic(rng, trials or 8)
    T = trials or 48
    per = np.array_split(np.arange(T), len(K_GROUPS))
    out = []
    for K, sel in zip(K_GROUPS, per, strict=True):
        kinds = np.where(np.arange(sel.size) < sel.size - 4, APPLICABLE, np.arange(sel.size) % 3 + 1)
        for kind in np.unique(kinds):
            n = int(np.sum(kinds == kind))
            L, mu, lam, eta, gamma = _draw(rng, n, K, kind)
            shared = np.arange(n) % 2 == 0
            out.append(
                dict(
                    A=_clients(rng, L, mu, shared),
                    b=rng.standard_normal((n, M_CL, DIM)) * L[:, None, None],
                    mu=mu,
                    L=L,
                    lam=lam,
                    eta=eta,
                    gamma=gamma,
                    K=np.full(n, K),
                    kind=np.full(n, kind),
                    shared=shared,
                    e0=rng.standard_normal((n, (M_CL + 1) * DIM)),
                )
            )
    return {k: np.concatenate([o[k] for o in out]) for k in out[0]}


def _simulate(batch, M, v):
    """Errors of ``moreau.fl.fedprox`` from the real and imaginary parts of ``v``, and from ``e0``:
    ``(sim, ref)`` both ``(3, T, N_SIM + 1, n)``, ref = M^t e_0 (here, in numpy)."""
    A, b, lam, K = batch["A"], batch["b"], batch["lam"], batch["K"]
    T, m, d, _ = A.shape
    starts = np.stack([v.real, v.imag, batch["e0"] / np.linalg.norm(batch["e0"], axis=-1, keepdims=True)])
    wg, wl = fedprox_optimum(mo.Quadratic(A, b), lam)
    center = np.concatenate([wg, wl.reshape(T, m * d)], axis=-1)
    sim = np.empty((3, T, N_SIM + 1, (m + 1) * d))
    for k in np.unique(K):  # one call per K (an int of fedprox); trials of a group batched
        s = np.flatnonzero(K == k)
        x0 = center[s] + starts[:, s]  # (3, n, (m+1)d)

        def three(x, s=s):  # the three starts as trials
            return np.broadcast_to(x[s], (3,) + x[s].shape)

        h = fedprox(
            mo.Quadratic(three(A), three(b)),
            lam=three(lam),
            gamma=three(batch["gamma"]),
            eta=three(batch["eta"]),
            K=int(k),
            rounds=N_SIM,
            w0=x0[..., :d],
            local0=x0[..., d:].reshape(3, s.size, m, d),
        )
        traj = np.concatenate([h.w_global, h.w_local.reshape(N_SIM + 1, 3, s.size, m * d)], axis=-1)
        sim[:, s] = np.moveaxis(traj, 0, 2) - center[s][None, :, None]
    ref = [starts]
    for _ in range(N_SIM):
        ref.append(np.einsum("tij,stj->sti", M, ref[-1]))
    return sim, np.stack(ref, axis=2), np.max(np.abs(center), axis=-1)


def prepare(batch):
    """The claim-independent part: round matrices, spectral radii and the simulations (quadratic);
    the logistic family's evaluation is cheap enough to run per claim."""
    if "X" in batch:
        return {"batch": batch}
    A, lam, gamma, eta, K = (batch[k] for k in ("A", "lam", "gamma", "eta", "K"))
    M = round_matrix(A, lam, gamma, eta, K)
    sr, v = spectral_radius(M)
    sim, ref, scale = _simulate(batch, M, v)
    # K N_SIM <= 640 steps, each rounding ~1e-16 of the largest |w| on the way (divergent instances, outside
    # the assumptions, grow): 1e-10 leaves a margin of 1e3
    allowed = 1e-10 * (1 + scale + np.max(np.abs(ref), axis=(0, 2, 3)))
    err = np.max(np.abs(sim - ref), axis=(0, 2, 3))
    z = sim[0] + 1j * sim[1]
    zn = np.linalg.norm(z, axis=-1)  # (T, N_SIM + 1), |z_0| = 1
    err_sr = np.max(np.abs(zn[:, 1:] - sr[:, None] ** np.arange(1, N_SIM + 1)), axis=1)
    return {"batch": batch, "M": M, "sr": sr, "allowed": allowed, "err": err, "err_sr": err_sr, "zn": zn}


def finish(prep, claim):
    batch = prep["batch"]
    if "X" in batch:
        return evaluate_logistic(batch, claim, PARTS)
    A, lam, gamma, eta, K, mu, L = (batch[k] for k in ("A", "lam", "gamma", "eta", "K", "mu", "L"))
    M, sr, allowed, err, err_sr, zn = (prep[k] for k in ("M", "sr", "allowed", "err", "err_sr", "zn"))
    rho = claim["rate"](gamma, lam, mu, L)
    app = claim["steps"](lam, mu, L, gamma, eta) & claim["cond12"](lam, mu, L, gamma, eta, K)
    consts = {
        "mu, L": "exact: the smallest and largest eigenvalue over the clients' A_i (constructed spectra)",
        "mu_g, L_g, mu_l, L_l, L_w": "Lemma 2 from mu, L, lam",
        "sr(M)": "numpy eig of the round matrix M",
        "w~": "moreau.fl.fedprox_optimum (closed form)",
        "K": "K_min of (12) in closed form (group's K)",
    }
    note = _note(batch, A, lam, gamma, eta, K, mu, L, M, sr, rho, app, zn)
    return {
        PARTS[0]: Sides(
            err,
            allowed,
            "exact",
            constants=consts,
            role="auxiliary",
            note="max |simulated error - M^t e_0| over t = 1..5, three starts",
        ),
        PARTS[1]: Sides(
            err_sr,
            allowed,
            "exact",
            constants=consts,
            role="auxiliary",
            note="max_t ||z_t| - sr^t|, z the complex error from the dominant eigenvector",
        ),
        PARTS[2]: Sides(sr, rho, "upper", applicable=app, constants=consts, note=note),
        PARTS[3]: Sides(
            sr**2,
            rho,
            "upper",
            applicable=app,
            constants=consts,
            note="the proof's reading (weaker than the distance reading)",
        ),
    }


def evaluate(batch, claim):
    return finish(prepare(batch), claim)


def _note(batch, A, lam, gamma, eta, K, mu, L, M, sr, rho, app, zn):
    """Measured facts for the report (strings; every number from this run)."""
    mu_g = lemma2(lam, mu, L)[0]
    parts = []
    if app.any():
        r = sr[app] / rho[app]
        gd = 1 - gamma * mu_g
        parts.append(
            f"max sr/rho {r.max():.4f}; sr <= 1 - gamma mu_g (exact-gradient rate) on "
            f"{np.mean(sr[app] <= gd[app] + 1e-12):.0%}; simulated |z_1|/|z_0| = sr to "
            f"{np.max(np.abs(zn[:, 1] - sr)):.1e}"
        )
        e, worst = batch["e0"][app], np.zeros(int(app.sum()))
        Ma = M[app]
        for _ in range(50):  # per-round contraction of the global error from random starts
            e1 = np.einsum("tij,tj->ti", Ma, e)
            worst = np.maximum(
                worst, np.linalg.norm(e1[:, :DIM], axis=-1) / np.linalg.norm(e[:, :DIM], axis=-1)
            )
            e = e1 / np.linalg.norm(e1, axis=-1, keepdims=True)
        op = np.linalg.norm(M[app], ord=2, axis=(-2, -1))
        parts.append(
            f"worst one-round contraction of the stacked error (||M||_2, Euclidean): {op.min():.3f}.."
            f"{op.max():.3f}, above rho on {np.mean(op > rho[app]):.0%}, its square above rho on "
            f"{np.mean(op**2 > rho[app]):.0%} (of the global error alone: unbounded, from e_g = 0)"
        )
        parts.append(
            f"per round from random starts, |e_g(t+1)|/|e_g(t)| exceeds rho on "
            f"{np.mean(worst > rho[app]):.0%} (max ratio to rho {np.max(worst / rho[app]):.2f})"
        )
        need = np.zeros(int(app.sum()), dtype=int)
        for k in range(1, int(K[app].max()) + 1):
            ok = (need == 0) & (
                spectral_radius(round_matrix(A[app], lam[app], gamma[app], eta[app], k))[0] <= rho[app]
            )
            need[ok] = k
        parts.append(
            f"smallest K with sr <= rho / K_min of (12): median {np.median(need / K[app]):.2f}, "
            f"max {np.max(need / K[app]):.2f}"
        )
    kind = batch["kind"]
    for name, k in (
        ("K < K_min (gamma above its band)", BELOW_K),
        ("K < K_min (eta <= 0.05/L_l)", TINY_ETA),
        ("gamma in (1.3, 1.9)/L_g", BIG_GAMMA),
    ):
        s = kind == k
        if s.any():
            parts.append(
                f"{name}: sr > rho on {np.sum(sr[s] > rho[s])}/{s.sum()}, sr >= 1 on {np.sum(sr[s] >= 1)}"
            )
    return "; ".join(parts)


_D, _SQ = PARTS[2], PARTS[3]
STATEMENTS = (
    Statement(
        id="fedprox.thm2",
        implies=("strongly convex objective (μ > 0)",),
        waived={
            "convex sample losses": (
                "every logistic sample loss is convex; the quadratic family has no samples"
            ),
        },
        source="FedProx analysis, Theorem 2, eq. (12)",
        paper="fedprox-personalization-analysis.md",
        latex=r"\gamma < 1/L_g,\ \eta \le 1/L_\ell,\ (2 + 64L_w^2\lambda^2/\mu_g^2)(1-\eta\mu_\ell)^K "
        r"\le (1-\gamma L_g)^4"
        r"\ \Rightarrow\ \text{rate } 1 - \gamma\mu_g/2 - (\gamma\mu_g)^2/2",
        text="Algorithm 1 with gamma < 1/L_g, eta <= 1/L_l and K as in (12) converges linearly to the FedProx "
        "optimum (global and local models) at rate 1 - gamma mu_g/2 - (gamma mu_g)^2/2",
        assumptions=(
            "L_i mu-strongly convex (Assumption 2)",
            "l(., z) L-smooth (Assumption 4)",
            "gamma < 1/L_g",
            "eta <= 1/L_l",
            "K satisfies (12)",
        ),
        scaling={
            "quadratic": scale_fields({**QUADRATIC_SCALING, "eta": (2, -1), "gamma": (2, -1), "e0": (1, 0)}),
            "logistic": scale_fields(
                {**LOGISTIC_SCALING, "sample_mu": (-2, 0), "L": (-2, 0), "eta": (2, 0), "gamma": (2, 0)},
                c_free=False,
            ),
        },
        families={
            "quadratic": ("strongly_convex, shared or random eigenvectors",),
            "logistic": (
                "ridge mu in [0.2, 1] (on half the instances carried by half of each client's samples, "
                "the others ridge-free); local rate at the optimum",
            ),
        },
        claimed="rate",
        instances=instances,
        prepare=prepare,
        evaluate=finish,
        claim=CLAIM,
        mutants=(
            Mutant(
                "rate 1 - gamma mu_g - (gamma mu_g)^2 (too fast)",
                {"rate": lambda g, lam, mu, L: (lambda x: 1 - x - x**2)(g * lemma2(lam, mu, L)[0])},
            ),
            Mutant(
                "wrong exponent: rate rho^2",
                {
                    "rate": lambda g, lam, mu, L: (lambda x: (1 - x / 2 - x**2 / 2) ** 2)(
                        g * lemma2(lam, mu, L)[0]
                    )
                },
            ),
            Mutant(
                "mu for mu_g in the rate",
                {"rate": lambda g, lam, mu, L: (lambda x: 1 - x / 2 - x**2 / 2)(g * mu)},
            ),
            Mutant("condition (12) dropped (any K >= 1)", {"cond12": lambda lam, mu, L, g, eta, K: K >= 1}),
            Mutant(
                "step condition relaxed: gamma < 2/L_g",
                {
                    "steps": lambda lam, mu, L, g, eta: (
                        (g < 2 / lemma2(lam, mu, L)[1]) & (eta <= 1 / lemma2(lam, mu, L)[3])
                    )
                },
            ),
            Mutant("inequality reversed (distance reading)", {"flip": (_D,)}),
        ),
        equivalent_mutants={
            "64 -> 0 in (12) (K from (2)(1 - eta mu_l)^K <= (1 - gamma L_g)^4)": (
                "not rejected on these families: (12) is conservative (see the note: the smallest K with "
                "sr <= rho is well below K_min)"
            ),
        },
    ),
)
