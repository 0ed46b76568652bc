r"""The synthetic data of the papers' figures (not for checking bounds: separable labels)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._backend import to_numpy
from .._logistic import Logistic
from .._multinomial import Multinomial
from .._ragged import RaggedMultinomial
from .._ragged import ragged as _ragged
from .._typing import Seed
from ._authors_synthetic import AUTHORS_SEED, authors_arrays
from ._problem import (
    FederatedProblem,
    Streams,
    check_int,
    check_real,
    check_seed,
    client_weights,
    seed_record,
)

__all__ = ["fedprox_synthetic", "synthetic"]


_DRAWS = ("moreau", "authors")


def _cov_diag(d: int) -> np.ndarray:
    return np.arange(1, d + 1, dtype=float) ** -1.2  # Sigma_jj = j^{-1.2}


def fedprox_synthetic(
    rng: Seed,
    *,
    R: float,
    m: int = 10,
    n: int = 200,
    d: int = 60,
    mu: float = 0.01,
    n_test: int = 0,
    trials: int | tuple[int, ...] = (),
    p: Any = None,
) -> FederatedProblem:
    r"""The FedProx analysis' synthetic logistic data (Section 6.1), for figures only.

    As printed: client ``k`` has features :math:`x \sim N(v_k, \Sigma)`,
    :math:`v_k \sim N(0, I_d)`, :math:`\Sigma = \mathrm{diag}(j^{-1.2})`, model
    weights :math:`w_k \sim N(0, R\,I_d)` and labels
    :math:`y = \mathrm{argmax}\,\sigma(w_k^\top x)`; 2,000 samples spread
    evenly over 10 clients (``m=10``, ``n=200``).

    Where the paper is silent (every choice here is ours):

    - labels are binary: the argmax over the two class probabilities
      :math:`(\sigma(-w_k^\top x), \sigma(w_k^\top x))`, i.e. ``y = +1`` iff
      :math:`w_k^\top x > 0` (ties, probability 0 unless ``R = 0``, give -1,
      numpy's first index);
    - :math:`N(0, R)` is read with ``R`` the *variance* of each entry of
      :math:`w_k` (entries i.i.d.); ``R = 0`` gives :math:`w_k = 0` and all
      labels -1, as printed;
    - ``d = 60`` (the dimension of the Synthetic data the section follows),
      no intercept, :math:`v_k` with i.i.d. :math:`N(0, 1)` entries;
    - the loss is ``Logistic(X, y, mu)`` with a ridge ``mu = 0.01``: the
      labels are a deterministic function of ``x``, so every client's data is
      separable by :math:`w_k` and without a ridge no minimiser exists;
    - ``w_star`` is :math:`w_k`, the model the paper tracks as ground truth; it
      is *not* a population minimiser of any loss here, so no ``rho2`` is
      given.  ``constants["R"]`` is the realised
      :math:`\max_k \|w_k - \sum_j p_j w_j\|` per trial (Assumption 1's R for
      this draw), ``constants["R_param"]`` the variance ``R``;
    - ``n_test`` extra samples per client (default 0: the paper measures
      :math:`\|\tilde w - w_\star\|`, not test accuracy) give ``test``.

    Shapes: objective batch ``(*T, m)``, ``w_star`` ``(*T, m, d)``.  Draw
    order per trial: v, w, training x, test x.  Constants ``mu``, ``L``
    ``(*T, m)`` (:math:`\lambda_{\max}(X^\top X)/(4n) + \mu`, exact per data
    set; the paper's step-size rule uses it without the ridge).

    References: the FedProx analysis, Section 6.1 ("Synthetic Dataset").
    """
    R = check_real(R, "R", lo=0.0)
    m, n, d = check_int(m, "m", 2), check_int(n, "n", 1), check_int(d, "d", 1)
    n_test = check_int(n_test, "n_test", 0)
    mu = check_real(mu, "mu", lo=0.0)
    p = client_weights(p, m)
    st = Streams(rng, trials)
    T = st.trials
    v = st.normal((m, d))
    w = np.sqrt(R) * st.normal((m, d))
    scale = np.sqrt(_cov_diag(d))

    def draw(k: int) -> tuple[np.ndarray, np.ndarray]:
        x = v[..., None, :] + scale * st.normal((m, k, d))
        return x, np.where((x @ w[..., None])[..., 0] > 0, 1.0, -1.0)

    X, y = draw(n)
    obj = Logistic(X, y, mu=mu)
    test = Logistic(*draw(n_test), mu=mu) if n_test else None
    wg = np.einsum("m,...md->...d", p, w)
    constants = {
        "R": np.linalg.norm(w - wg[..., None, :], axis=-1).max(axis=-1),
        "R_param": R,
        "mu": mu,
        "L": to_numpy(obj.curvature_bounds()[1]),
        "n": n,
        "m": m,
        "d": d,
    }
    how = {
        "R": "realised max_k |w_k - sum_j p_j w_j| of this draw",
        "R_param": "variance of the entries of w_k",
        "mu": "ridge (ours; the paper states none)",
        "L": "exact: lambda_max(X^T X)/(4n) + mu per data set",
        "w_star": "the generating weights w_k (separable labels: not a population minimiser)",
        "w_star_global": "sum_k p_k w_k",
    }
    params = {
        "generator": "fedprox_synthetic",
        "rng": seed_record(rng),
        "R": R,
        "m": m,
        "n": n,
        "d": d,
        "mu": mu,
        "n_test": n_test,
        "trials": T,
        "p": p.tolist(),
    }
    return FederatedProblem(obj, w, wg, p, constants, how, params, test)


def synthetic(
    alpha: float,
    beta: float,
    rng: Seed | None = None,
    *,
    n_clients: int | None = None,
    n_classes: int = 10,
    d: int = 60,
    size_scale: float | None = None,
    max_size: int | None = None,
    mu: float = 0.01,
    train_fraction: float = 0.75,
    trials: int | tuple[int, ...] = (),
    ragged: bool = True,
    draw: str = "moreau",
) -> FederatedProblem:
    r"""The public Synthetic(alpha, beta) federated data (10-class softmax), for figures only.

    The recipe of the FedProx (Li et al.) code that pFedMe Section 5 adopts:
    client ``k`` has :math:`n_k = \lfloor\mathrm{lognormal}(4, 2)\rfloor + 50`
    samples (times ``size_scale``; pFedMe uses 100 clients and sizes in
    [250, 25810], i.e. ``n_clients=100, size_scale=5``), :math:`u_k \sim N(0, \alpha^2)`,
    :math:`B_k \sim N(0, \beta^2)`, :math:`v_k \sim N(B_k, 1)` (``d`` entries),
    :math:`W_k \sim N(u_k, 1)` (``d x C``), :math:`b_k \sim N(u_k, 1)` (``C``),
    :math:`x \sim N(v_k, \Sigma)`, :math:`\Sigma = \mathrm{diag}(j^{-1.2})`,
    :math:`y = \mathrm{argmax}(x^\top W_k + b_k)`.  ``alpha`` and ``beta`` are
    standard deviations, as in that code (the papers write
    :math:`N(0, \alpha)`).

    Our choices: each client's samples are split into the first
    :math:`\lfloor 0.75\, n_k\rfloor` for training and the rest for testing
    (pFedMe: "split randomly with 75% and 25%"; the rows are i.i.d., so a
    fixed split is a random one); the clients, of different sizes, are held in
    size buckets (:func:`moreau.ragged`: memory and time proportional to the
    number of samples; ``ragged=False``: every client padded to the largest
    size with zero weights, zero features and label 0, the same function);
    the model is ``Multinomial([x, 1], y, C, mu)`` with an intercept column appended
    (the ``b_k`` of the recipe), so ``theta`` has ``(d + 1) C`` entries and
    ``w_star`` is the generating :math:`[W_k; b_k]` flattened row-major
    (*not* a population minimiser: the argmax labels are separable and
    strongly label-skewed); the ridge ``mu = 0.01`` is ours (so that
    minimisers exist); ``p`` is uniform (pFedMe averages the sampled clients
    uniformly); ``max_size`` optionally caps :math:`n_k` (memory grows as
    ``trials x sum n_k x (d + 1)``, ``x max n_k`` for ``ragged=False``).

    Returns a :class:`FederatedProblem` with ``objective`` (train) and
    ``test`` (:class:`~moreau.RaggedMultinomial`, a :class:`~moreau.Multinomial`;
    batch ``(*T, n_clients)``), constants ``alpha``,
    ``beta``, ``mu``, ``L`` (the Multinomial curvature bound per data set),
    ``n_train`` and ``n_test`` ``(*T, n_clients)``.  Draw order per trial:
    sizes, u, B, v, W, b, x (client ``k``'s rows are the first ``n_k`` of a
    ``(max_k n_k, d)`` block drawn for every client in turn: the stream of one
    ``(n_clients, max_k n_k, d)`` draw, drawn in chunks of clients).

    ``draw`` (default ``"moreau"``: everything above, from ``rng``) or ``"authors"``: the data
    set of pFedMe's own experiments, drawn as the authors' script
    ``data/Synthetic/generate_synthetic_05_05.py`` (github.com/CharlieDinh/pFedMe) draws it: a
    ``numpy.random.RandomState(0)`` (their ``np.random.seed(0)``) making their calls in their
    order (sizes, u, B, every v_k, then per client W_k, b_k and its rows, by
    ``multivariate_normal``; see :mod:`moreau.data._authors_synthetic`).  The authors': the seed,
    the sizes (``n_clients`` and ``size_scale``, ``None`` by default, are 30 and 1 for moreau's
    draw and the script's 100 and 5 here: 250 to 25,810 samples, 205,795 in all; other values,
    or other ``alpha, beta, n_classes, d`` than 0.5, 0.5, 10, 60, replay the script with its
    constants edited), every ``u_k, B_k, v_k, W_k, b_k``, row and label, client ``k`` their
    user ``f_%05d``.  ``rng`` must then be ``None`` (the seed is theirs) and ``trials`` ``()``
    (one fixed data set).  Still moreau's: the split (their
    script shuffles each client's rows with Python's unseeded ``random.shuffle`` and trains on
    the first 90 %, which cannot be replayed and is not the paper's 75/25: here the first
    :math:`\lfloor` ``train_fraction`` :math:`n_k\rfloor` rows in draw order train, the rest
    test; ``train_fraction=0.9`` gives the script's proportions), ``max_size`` (keeps each
    client's first rows *after* the full draw, so the other clients' rows are still theirs), the
    intercept column, the ridge ``mu``, uniform ``p``, the ragged layout.  ``params`` then
    records ``draw="authors"`` and ``authors_seed``.

    References: pFedMe, Section 5.1 (Synthetic, alpha = beta = 0.5); the
    FedProx paper of Li et al. (Synthetic(alpha, beta)).
    """
    if not (isinstance(draw, str) and draw in _DRAWS):
        raise ValueError(f"draw must be one of {', '.join(map(repr, _DRAWS))} (got {draw!r})")
    authors = draw == "authors"
    if authors and rng is not None:
        raise ValueError(
            f"rng must be None with draw='authors': the authors' draw uses their own seed "
            f"(numpy.random.RandomState({AUTHORS_SEED})), not rng (got rng={rng!r})"
        )
    if authors and not (isinstance(trials, tuple) and trials == ()):
        raise ValueError(f"trials must be () with draw='authors': it is one fixed data set (got {trials!r})")
    alpha, beta = check_real(alpha, "alpha", lo=0.0), check_real(beta, "beta", lo=0.0)
    n_clients = (100 if authors else 30) if n_clients is None else n_clients
    size_scale = (5 if authors else 1) if size_scale is None else size_scale
    m, C, d = check_int(n_clients, "n_clients", 1), check_int(n_classes, "n_classes", 2), check_int(d, "d", 1)
    size_scale = check_int(size_scale, "size_scale", 1)
    if max_size is not None:
        max_size = check_int(max_size, "max_size", 2)
    mu = check_real(mu, "mu", lo=0.0)
    frac = check_real(train_fraction, "train_fraction", lo=0.0, strict=True)
    if frac >= 1:
        raise ValueError(f"train_fraction must be < 1 (got {frac:g})")
    if not isinstance(ragged, bool | np.bool_):
        raise TypeError(f"ragged must be True or False (got {ragged!r})")
    T: tuple[int, ...]
    if authors:
        A = authors_arrays(alpha, beta, m, C, d, size_scale)
        T, sizes, W, b = (), A["sizes"], A["W"], A["b"]
        if max_size is not None:
            sizes = np.minimum(sizes, max_size)
        n_tr, n_te = _split(sizes, frac)
        train, test = _authors_objectives(A, sizes, n_tr, C, mu)
    else:
        st = Streams(check_seed(rng), trials)  # the moreau draw needs rng
        T = st.trials
        sizes = (st.lognormal(4.0, 2.0, (m,)).astype(np.int64) + 50) * size_scale
        if max_size is not None:
            sizes = np.minimum(sizes, max_size)
        n_tr, n_te = _split(sizes, frac)
        u = alpha * st.normal((m,))
        v = beta * st.normal((m,))[..., None] + st.normal((m, d))
        W = u[..., None, None] + st.normal((m, d, C))
        b = u[..., None] + st.normal((m, C))
        scale = np.sqrt(_cov_diag(d))
        train, test = _samples(st, sizes, n_tr, v, W, b, scale, C, mu)
    if not ragged:
        train, test = train.padded(), test.padded()
    w_star = np.concatenate([W, b[..., None, :]], axis=-2).reshape(T + (m, (d + 1) * C))
    p = np.full(m, 1.0 / m)
    constants = {
        "alpha": alpha,
        "beta": beta,
        "mu": mu,
        "L": to_numpy(train.curvature_bounds()[1]),
        "n_train": n_tr,
        "n_test": n_te,
        "m": m,
        "d": d,
        "n_classes": C,
    }
    how = {
        "L": "Multinomial bound lambda_max(X^T W X)/(2 sum w) + mu per training set (valid, not exact)",
        "mu": "ridge (ours)",
        "w_star": "generating [W_k; b_k] flattened (separable labels: not a minimiser)",
        "w_star_global": "uniform mean of w_star",
        "n_train": "floor(train_fraction n_k) rows, the rest test",
    }
    params = {
        "generator": "synthetic",
        "rng": None if rng is None else seed_record(rng),  # None: the authors' draw
        "alpha": alpha,
        "beta": beta,
        "n_clients": m,
        "n_classes": C,
        "d": d,
        "size_scale": size_scale,
        "max_size": max_size,
        "mu": mu,
        "train_fraction": frac,
        "trials": T,
        "ragged": bool(ragged),
    }
    if authors:
        params.update(draw="authors", authors_seed=AUTHORS_SEED)
        how["draw"] = (
            f"the pFedMe authors' script replayed (numpy.random.RandomState({AUTHORS_SEED})): sizes, "
            "W_k, b_k, rows, labels theirs; split, max_size, intercept, mu moreau's"
        )
    return FederatedProblem(train, w_star, w_star.mean(axis=-2), p, constants, how, params, test)


def _split(sizes: np.ndarray, frac: float) -> tuple[np.ndarray, np.ndarray]:
    """``(n_train, n_test)``: the first ``floor(frac n_k)`` rows (at least one) train, the rest test."""
    n_tr = np.maximum((frac * sizes).astype(np.int64), 1)
    n_te = sizes - n_tr
    if np.any(n_te < 1):
        raise ValueError(f"train_fraction={frac:g} leaves a client without test samples")
    return n_tr, n_te


def _authors_objectives(
    A: dict[str, Any], sizes: np.ndarray, n_tr: np.ndarray, C: int, mu: float
) -> tuple[RaggedMultinomial, RaggedMultinomial]:
    """The training and test objectives of the authors' draw: client ``k``'s first ``sizes[k]``
    rows (all of them unless ``max_size`` cut them) with the intercept column, the first
    ``n_tr[k]`` for training, the rest for testing."""
    parts: tuple[list[np.ndarray], ...] = ([], [], [], [])  # train x, train y, test x, test y
    for k, (x, y) in enumerate(zip(A["x"], A["y"], strict=True)):
        n, t = int(sizes[k]), int(n_tr[k])
        x1 = np.concatenate([x[:n], np.ones((n, 1))], axis=-1)
        for out, sl in ((parts[:2], slice(0, t)), (parts[2:], slice(t, n))):
            out[0].append(x1[sl])
            out[1].append(y[:n][sl])
    cat = [np.concatenate(p) for p in parts]
    return (
        _ragged(Multinomial, cat[0], cat[1], n_tr, mu=mu, n_classes=C),
        _ragged(Multinomial, cat[2], cat[3], sizes - n_tr, mu=mu, n_classes=C),
    )


_CHUNK_BYTES = 32 * 2**20  # the Gaussian draws of one chunk of clients (the peak of the drawing)


def _samples(
    st: Streams,
    sizes: np.ndarray,
    n_tr: np.ndarray,
    v: np.ndarray,
    W: np.ndarray,
    b: np.ndarray,
    scale: np.ndarray,
    C: int,
    mu: float,
) -> tuple[RaggedMultinomial, RaggedMultinomial]:
    """The training and test objectives of :func:`synthetic` (ragged): per trial, chunks of
    clients drawn in turn (one trial's draws are those of one ``(m, max n_k, d)`` call), their
    labels and intercept formed per chunk, the first ``n_tr`` rows of each client kept for
    training, the next ones for testing, concatenated in C order over ``(*T, m)``."""
    m, d = sizes.shape[-1], scale.shape[0]
    flat = sizes.reshape(-1, m)
    vs, Ws, bs, ntr = v.reshape(-1, m, d), W.reshape(-1, m, d, C), b.reshape(-1, m, C), n_tr.reshape(-1, m)
    parts: tuple[list[np.ndarray], ...] = ([], [], [], [])  # train x, train y, test x, test y
    for t, g in enumerate(st.gens):
        k = int(flat[t].max())
        step = max(1, _CHUNK_BYTES // (8 * k * d))
        j = np.arange(k)
        for c in range(0, m, step):
            sl = slice(c, min(c + step, m))
            x = vs[t, sl, None, :] + scale * g.standard_normal((sl.stop - c, k, d))
            y = np.argmax(x @ Ws[t, sl] + bs[t, sl, None, :], axis=-1).astype(float)
            x = np.concatenate([x, np.ones(x.shape[:-1] + (1,))], axis=-1)
            train = j < ntr[t, sl, None]
            test = ~train & (j < flat[t, sl, None])
            for keep, out in ((train, parts[:2]), (test, parts[2:])):
                out[0].append(x[keep])
                out[1].append(y[keep])
    cat = [np.concatenate(p) for p in parts]
    return (
        _ragged(Multinomial, cat[0], cat[1], n_tr, mu=mu, n_classes=C),
        _ragged(Multinomial, cat[2], cat[3], sizes - n_tr, mu=mu, n_classes=C),
    )
