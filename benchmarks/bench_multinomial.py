#!/usr/bin/env python
r"""Multinomial (softmax) prox: moreau against what a user would otherwise write.

    python benchmarks/bench_multinomial.py [--quick] [--json PATH] [--seed N] [--blas-threads N]

m clients, each with n samples of d features and C classes (labels drawn from a softmax model),
lam = 1, mu = 0, the prox point w ~ N(0, I) of size D = d C.  Methods, timed in interleaved rounds
(``bench_prox.measure_interleaved``: one call of each per round, shuffled; best and median):

(a)  ``moreau.prox(moreau.Multinomial(X, y, n_classes=C), w, lam)`` including construction, at its
     default (certified, a few ulps) tolerance, and at ``tol`` = the L-BFGS-B loop's worst error;
(b)  a plain batched numpy Newton a competent user would write (softmax, gradient, the D x D
     Hessian by C(C+1)/2 batched GEMMs ``X^T diag(q) X`` with
     the symmetric fill, ``numpy.linalg.solve``, full steps from w; stop at max|grad h| < 1e-12),
     and the same run one step further;
(c)  ``scipy.optimize.minimize(method='L-BFGS-B')`` per client with the analytic gradient
     (gtol 1e-10, ftol 1e-15), timed on a subset of clients and scaled.

Each call's minor page faults (``getrusage``: fresh memory the allocator took from the system) are
counted too (median per call over the timed rounds, the warm-up call left out).

Errors are certified the same way for every method: ``||theta - prox(w)|| <= ||theta - theta_m||
+ bound_m`` with ``theta_m`` moreau's default answer and ``bound_m`` its certificate.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_prox as bp  # noqa: E402  (sets the BLAS threads before numpy loads)

np, mo = bp.np, bp.mo
import scipy.optimize  # noqa: E402

SIZES = {
    "default": dict(m=500, n=100, d=10, C=4, loop=100, k=7),
    "quick": dict(m=50, n=30, d=4, C=3, loop=20, k=3),
}


def softmax_data(rng, m, n, d, C):
    X = rng.standard_normal((m, n, d))
    W = rng.standard_normal((m, d, C))
    Z = X @ W
    P = np.exp(Z - Z.max(-1, keepdims=True))
    P /= P.sum(-1, keepdims=True)
    u = rng.random((m, n, 1))
    y = (P.cumsum(-1) < u).sum(-1).clip(0, C - 1)
    w = rng.standard_normal((m, d * C))
    return X, y, w


def _grad_hess(X, Y, w, lam, theta, hess=True):
    """Gradient (and Hessian) of h(theta) = mean_j(lse - z_y) + lam/2 |theta - w|^2, batched."""
    m, n, d = X.shape
    C = Y.shape[-1]
    Z = X @ theta.reshape(m, d, C)
    P = np.exp(Z - Z.max(-1, keepdims=True))
    P /= P.sum(-1, keepdims=True)
    g = (np.swapaxes(X, 1, 2) @ (P - Y)).reshape(m, d * C) / n + lam * (theta - w)
    if not hess:
        return g, None
    # the blocks X^T diag(pi_a (delta_ac - pi_c)) X / n: one batched GEMM per pair a <= c,
    # block (c, a) its transpose (what a user who knows numpy writes; an einsum over
    # (m, n, C, C, d) temporaries is 5x slower)
    Xt = np.swapaxes(X, 1, 2)
    H = np.empty((m, d, C, d, C))
    for a in range(C):
        for c in range(a, C):
            q = P[..., a] * ((a == c) - P[..., c]) / n
            B = Xt @ (q[..., None] * X)
            H[:, :, a, :, c] = B
            if c != a:
                H[:, :, c, :, a] = np.swapaxes(B, 1, 2)
    H = H.reshape(m, d * C, d * C)
    H += lam * np.eye(d * C)
    return g, H


def plain_newton(X, y, C, w, lam, gtol=1e-12, max_iter=50, extra=0):
    """Full Newton steps from w; stop when max |grad h| < gtol, then ``extra`` more steps."""
    Y = np.eye(C)[y]
    theta = w.copy()
    left = extra
    for _ in range(max_iter):
        g, H = _grad_hess(X, Y, w, lam, theta)
        if np.abs(g).max() < gtol:
            if left == 0:
                break
            left -= 1
        theta = theta - np.linalg.solve(H, g[..., None])[..., 0]
    return theta


def lbfgs_loop(X, y, C, w, lam, clients):
    out = np.empty((len(clients), w.shape[-1]))
    for i, j in enumerate(clients):
        Xi, Yi, wi = X[j : j + 1], np.eye(C)[y[j : j + 1]], w[j : j + 1]

        def fg(t, Xi=Xi, Yi=Yi, wi=wi):
            t = t[None]
            Z = Xi @ t.reshape(1, Xi.shape[-1], C)
            mz = Z.max(-1, keepdims=True)
            lse = (mz + np.log(np.exp(Z - mz).sum(-1, keepdims=True)))[..., 0]
            v = float((lse - (Yi * Z).sum(-1)).mean() + lam / 2 * ((t - wi) ** 2).sum())
            g, _ = _grad_hess(Xi, Yi, wi, lam, t, hess=False)
            return v, g[0]

        r = scipy.optimize.minimize(
            fg, w[j], jac=True, method="L-BFGS-B", options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 10_000}
        )
        out[i] = r.x
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--seed", type=int, default=20240607)
    p.add_argument("--blas-threads", type=int, default=1)  # read by bench_prox at import
    a = p.parse_args(argv)
    cfg = SIZES["quick" if a.quick else "default"]
    m, n, d, C, nloop, k = (cfg[key] for key in ("m", "n", "d", "C", "loop", "k"))
    info, git = bp.machine_info("numpy"), bp.git_info()
    bp.print_machine(info, git)
    rng = np.random.default_rng(a.seed)
    X, y, w = softmax_data(rng, m, n, d, C)
    lam = 1.0
    print(
        f"\n=== Multinomial prox: m = {m}, n = {n}, d = {d}, C = {C} (D = {d * C}), lam = {lam}, mu = 0; "
        f"seed {a.seed} ==="
    )
    theta_m, info_m = mo.prox(mo.Multinomial(X, y, n_classes=C), w, lam, return_info=True)
    bound_m = np.asarray(info_m.error_bound)
    clients = np.arange(min(nloop, m))
    th_l = lbfgs_loop(X, y, C, w, lam, clients)
    err_l = np.linalg.norm(th_l - theta_m[clients], axis=-1) + bound_m[clients]
    tol_match = float(err_l.max())
    fns = {
        "moreau": (lambda: mo.prox(mo.Multinomial(X, y, n_classes=C), w, lam), None),
        "moreau-matched": (lambda: mo.prox(mo.Multinomial(X, y, n_classes=C), w, lam, tol=tol_match), None),
        "newton": (lambda: plain_newton(X, y, C, w, lam), None),
        "newton+1": (lambda: plain_newton(X, y, C, w, lam, extra=1), None),
        "lbfgs": (lambda: lbfgs_loop(X, y, C, w, lam, clients), None),
    }
    faults = {key: [] for key in fns}

    def counted(key, fn):
        def run():
            r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            out = fn()
            faults[key].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0)
            return out

        return run

    fns = {key: (counted(key, fn), warm) for key, (fn, warm) in fns.items()}
    timings, outs = bp.measure_interleaved(fns, k)
    faults = {key: int(np.median(v[1:])) for key, v in faults.items()}  # [0]: the warm-up call
    timings["lbfgs"] = bp.scaled(timings["lbfgs"], m / len(clients))
    errs = {
        key: float((np.linalg.norm(outs[key] - theta_m, axis=-1) + bound_m).max())
        for key in ("moreau", "moreau-matched", "newton", "newton+1")
    }
    errs["lbfgs"] = tol_match
    labels = {
        "moreau": "(a) moreau incl. Multinomial(), default tolerance",
        "moreau-matched": f"(a) moreau incl. Multinomial(), tol = L-BFGS-B's worst error {tol_match:.1e}",
        "newton": "(b) plain batched numpy Newton, stop at max|grad h| < 1e-12",
        "newton+1": "(b) the same, one more full step",
        "lbfgs": f"(c) scipy L-BFGS-B per client (timed on {len(clients)} of {m}, scaled)",
    }
    print(f"  {'method':<78} {'best':>9} {'median':>9}   certified error (max)   page faults/call")
    for key in fns:
        t = timings[key]
        print(
            f"  {labels[key]:<78} {bp.fmt_t(t['best']):>9} {bp.fmt_t(t['median']):>9}   {errs[key]:.1e}"
            f"{faults[key]:>26}"
        )
    ratios = {
        "matched_vs_lbfgs": bp.ratio_line(
            "moreau (matched tol) vs (c) L-BFGS-B loop", timings["moreau-matched"], timings["lbfgs"], 5.0
        ),
        "default_vs_newton+1": bp.ratio_line(
            "moreau (default) vs (b) plain Newton + 1 step", timings["moreau"], timings["newton+1"], 1.0
        ),
        "default_vs_newton": bp.ratio_line(
            "moreau (default) vs (b) plain Newton", timings["moreau"], timings["newton"]
        ),
    }
    print(f"  mean Newton iterations (moreau default): {float(np.mean(info_m.iterations)):.2f}")
    if a.json:
        Path(a.json).write_text(
            json.dumps(
                {
                    "params": dict(cfg, lam=lam, mu=0.0, seed=a.seed),
                    "machine": info,
                    "git": git,
                    "timings": {
                        key: {kk: v for kk, v in t.items() if kk != "times"} | {"times": list(t["times"])}
                        for key, t in timings.items()
                    },
                    "certified_error": errs,
                    "ratios": ratios,
                    "page_faults_per_call": faults,
                    "mean_iterations": float(np.mean(info_m.iterations)),
                    "when": time.strftime("%Y-%m-%d %H:%M:%S"),
                },
                indent=2,
                default=bp._json_default,
            )
        )
        print(f"results written to {a.json}")


if __name__ == "__main__":
    main()
