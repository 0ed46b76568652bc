r"""The pFedMe authors' implementation conventions, each a keyword switch (off: the papers' algorithms).

The authors' released code (github.com/CharlieDinh/pFedMe, read at commit caf24b1) deviates from
the papers in ways that move the reported numbers.  :func:`pfedme` and :func:`per_fedavg` run the
papers' algorithms (every switch off: the same iterates as :func:`moreau.fl.pfedme` with
``inner=K`` and :func:`moreau.fl.per_fedavg`, on the same draws, tested to 1e-12) and, one switch
at a time, what that code does instead.  What was read there (reimplemented, not copied):

1. ``warm_start`` (pFedMe).  ``FLAlgorithms/users/userpFedMe.py``, ``UserpFedMe.train``: the K
   inner steps of ``pFedMeOptimizer.step`` update ``self.model``'s parameters (θ); the local update
   that follows changes only ``self.local_model`` (w_{i,r}), so the next local step's inner solve
   starts from the previous step's θ, not from :math:`w_{i,r}^t` as Algorithm 1 line 7 (and
   :func:`moreau.fl.pfedme`) restarts it.  Across rounds θ is *not* kept:
   ``serverbase.py``, ``Server.send_parameters`` → ``userbase.py``, ``User.set_parameters`` sets both
   θ and the local model to :math:`w_t` at the start of every round.
2. ``hidden_mu`` (pFedMe).  ``FLAlgorithms/optimizers/fedoptimizer.py``, ``pFedMeOptimizer.step``:
   the inner step is :math:`\theta \leftarrow \theta - \eta_p(\nabla\tilde f_i(\theta) +
   \lambda(\theta - w_{i,r}) + \mu\theta)`, ``mu = 0.001`` by the constructor's default, which
   ``UserpFedMe`` never overrides: an L2 term :math:`\frac{\mu}{2}\|\theta\|^2` in the inner
   problem (7) that the paper does not have (:data:`OFFICIAL_MU`).
3. ``sample_weights`` (both).  ``serverbase.py``, ``Server.persionalized_aggregate_parameters``
   (pFedMe, then the β-mix with the previous global model) and ``Server.aggregate_parameters``
   (Per-FedAvg): the sampled clients' models averaged with weights
   :math:`n_i/\sum_{j\in S^t} n_j` (``train_samples``), not :math:`1/S` (pFedMe Algorithm 1
   line 10; Per-FedAvg Algorithm 1).
4. ``personal="local"`` (pFedMe).  ``userbase.py``, ``User.test_persionalized_model`` evaluates
   ``persionalized_model_bar``, which ``pFedMeOptimizer.step`` returns as its ``param_groups``'
   parameter list: the very parameter objects of ``self.model``.  ``UserpFedMe.train`` ends with
   ``update_parameters(self.local_model)``, which overwrites those parameters' data with the
   local model, so the "personalised" model evaluated (``serverpFedMe.py``, ``pFedMe.train`` →
   ``evaluate_personalized_model``, after every client's training, before aggregation) is the
   local model :math:`w_{i,R}^t` of the last local step, not the last inner solution
   :math:`\tilde\theta_i` (``personal="inner"``, the default, what ``pfedme-synthetic`` evaluates)
   nor the prox of the global model, eq. (3) (``personal="prox"``: ``moreau.prox``, certified).
   (The authors confirm that it "is just a copy of local_model": CharlieDinh/pFedMe issue #5.)
5. ``test_adaptation`` (Per-FedAvg; **it uses test data to adapt the evaluated model: the test
   set leaks**).  ``serverbase.py``, ``Server.evaluate_one_step`` calls ``userperavg.py``,
   ``UserPerAvg.train_one_step`` for every client at the start of every round, on the global
   model: one SGD step of size α (``learning_rate``) on the client's next *test* batch, then one
   of size β (``beta``) on the following test batch from the point reached (no restore, no
   meta-gradient), and only then the test accuracy.  The batches are ``User.get_next_test_batch``'s:
   the client's test rows in order (a ``DataLoader`` without shuffling), ``batch_size`` at a time,
   the last batch short, starting over when exhausted; two per round, so round t adapts on
   batches 2t and 2t+1 (mod the number of batches).  Off: the personalised model is one exact
   gradient step on the client's training data, :math:`w - \alpha\nabla f_i(w)` (Per-FedAvg
   eq. (3), ``moreau.fl.per_fedavg``'s ``theta``).

Not switched here (the same in every run): the code's mini-batches are the client's training rows
in a fixed order (``get_next_train_batch``), moreau draws them i.i.d. (the papers' assumption);
its Per-FedAvg is the first-order variant (``UserPerAvg.train``: the β-step's gradient at the
α-step's point, applied at the restored model), here ``variant="first_order"`` of
:func:`per_fedavg`; its models have no ridge, the clients' objective here keeps its own μ (the
hidden term is on top of it); its accuracy is correct test predictions of all clients over all
their test rows (``Server.evaluate``), as ``moreau.experiments._evaluate.Split.accuracy``.

Randomness: exactly :func:`moreau.fl.pfedme`'s and :func:`moreau.fl.per_fedavg`'s layouts (no
switch draws anything), with a single trial (no leading batch axes); mini-batches gathered
(:class:`moreau.fl._minibatches.MiniBatches`, i.i.d. with replacement).  ``record(t, w_t, personal)``
is called at t = 0 and after every round (``personal()`` returns the ``(m, d)`` personalised
models, computed only when called), as ``experiments._pfedme_runs``.
"""

from __future__ import annotations

import numpy as np

from moreau import prox
from moreau.fl._common import History, gathered, gradient, participation, sample_clients
from moreau.fl._minibatches import MiniBatches

__all__ = ["OFFICIAL_MU", "PERSONAL", "adaptation_batch", "per_fedavg", "pfedme", "sample_counts"]

#: ``pFedMeOptimizer.__init__``'s ``mu`` default (fedoptimizer.py), the hidden L2 of the inner problem
OFFICIAL_MU = 0.001
PERSONAL = ("inner", "prox", "local")
_VARIANTS = ("first_order", "hessian")


def _rng(rng):
    return rng if rng is None or isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def sample_counts(f) -> np.ndarray:
    """Each client's number of rows of positive weight ``(m,)`` (``train_samples`` of the code)."""
    return np.sum(np.asarray(f.weights) > 0, axis=-1).astype(float)


def _weights(f, sample_weights):
    if sample_weights is False or sample_weights is None:
        return None
    n = sample_counts(f) if sample_weights is True else np.asarray(sample_weights, dtype=float)
    if n.shape != (f.batch_shape[-1],) or np.any(n < 0) or not n.sum() > 0:
        raise ValueError(
            f"sample_weights must be True or {f.batch_shape[-1]} counts >= 0 with a positive sum"
        )
    return n


def _average(W, idx, n):
    """The server's average of the local models ``W`` ``(m, d)`` over the sampled ``idx`` (None: all):
    uniform (``n`` None, moreau.fl's operations) or weighted by the sample counts ``n``."""
    if n is None:
        return W.mean(axis=0) if idx is None else W[idx].mean(axis=0)
    sel = np.arange(W.shape[0]) if idx is None else idx
    p = n[sel] / n[sel].sum()
    return np.sum(p[:, None] * W[sel], axis=0)


def _start(f, w0):
    d = f.dim
    return np.zeros(d) if w0 is None else np.array(np.broadcast_to(np.asarray(w0, dtype=float), (d,)))


def pfedme(
    f,
    *,
    lam,
    eta,
    beta,
    R,
    K,
    rounds,
    inner_eta="client",
    S=None,
    batch_size=None,
    w0=None,
    rng=None,
    warm_start=False,
    hidden_mu=0.0,
    sample_weights=False,
    personal="inner",
    record=None,
    keep=True,
):
    r"""pFedMe, Algorithm 1 with K inner gradient steps, and the authors' conventions 1-4 as switches.

    Per round t every client starts from :math:`w_{i,0}^t = w_t` and for r = 0..R-1 draws a
    mini-batch (``batch_size``; None: all its rows), takes K steps
    :math:`\theta \leftarrow \theta - \eta_p(\nabla\tilde f_i(\theta) + \lambda(\theta - w_{i,r}^t)
    [+ \mu_h\theta])` from :math:`\theta = w_{i,r}^t` (``warm_start``: from the previous local
    step's θ; :math:`w_t` at r = 0), then :math:`w_{i,r+1}^t = w_{i,r}^t - \eta\lambda(w_{i,r}^t - \theta)`;
    the server samples S clients and sets :math:`w_{t+1} = (1-\beta)w_t + \beta\,\mathrm{avg}`, the
    average uniform or (``sample_weights``) by sample counts.  :math:`\eta_p` is ``inner_eta``:
    ``"client"`` :math:`1/(L_i+\lambda)` (``f.smoothness()``) or a number (the code's
    ``personal_learning_rate``); :math:`\mu_h` is ``hidden_mu`` (0: none; the code's
    :data:`OFFICIAL_MU`).  ``personal``: ``"inner"`` the last inner solution of the round,
    ``"prox"`` :math:`\mathrm{prox}_{f_i/\lambda}(w_t)` (``moreau.prox``), ``"local"``
    :math:`w_{i,R}^t` (the code's ``persionalized_model_bar``, see the module).  Returns a
    :class:`moreau.fl.History` (``w_global``, and with ``keep`` ``w_local``, ``theta``, indexed as
    :func:`moreau.fl.pfedme`'s ``personal="inner"`` / ``"certified"``)."""
    if personal not in PERSONAL:
        raise ValueError(f"personal must be one of {PERSONAL} (got {personal!r})")
    m, d = f.batch_shape[-1], f.dim
    S = m if S is None else int(S)
    rng = _rng(rng)
    step = (
        1.0 / (np.asarray(f.smoothness(), dtype=float) + lam)[:, None]
        if inner_eta == "client"
        else float(inner_eta)
    )
    n = _weights(f, sample_weights)
    batches = None if batch_size is None else MiniBatches(f, ())
    w = _start(f, w0)
    W = np.broadcast_to(w, (m, d))

    def personal_of(w, W, theta):
        return {
            "inner": lambda: theta,
            "local": lambda: W,
            "prox": lambda: np.asarray(prox(f, np.broadcast_to(w, (m, d)), lam)),
        }[personal]

    gs, ls, ths = [w], [W], [personal_of(w, W, W)()] if keep else []
    if record is not None:
        record(0, w, personal_of(w, W, W))
    for t in range(rounds):
        W = np.broadcast_to(w, (m, d))
        theta = W
        for _ in range(R):
            fk = f if batches is None else batches.objective(rng, batch_size, replace=True)
            grad = gradient(fk)[0]  # fk.grad without re-checking the algorithm's own finite iterates
            theta = W if not warm_start else theta  # the code: theta carried from the last local step
            for _ in range(K):
                g = grad(theta) + lam * (theta - W)
                if hidden_mu:
                    g = g + hidden_mu * theta
                theta = theta - step * g
            W = W - eta * lam * (W - theta)
            if not np.all(np.isfinite(W)):
                raise ValueError(f"pfedme diverged at round {t + 1}: eta or inner_eta too large")
        idx = sample_clients(rng, (), m, S) if S < m else None
        w = (1 - beta) * w + beta * _average(W, idx, n)
        if keep:
            gs.append(w)
            ls.append(W)
            ths.append(personal_of(w, W, theta)())
        if record is not None:
            record(t + 1, w, personal_of(w, W, theta))
    return History(
        w_global=np.stack(gs) if keep else w[None],
        w_local=np.stack(ls) if keep else None,
        theta=np.stack(ths) if keep else None,
        rounds=rounds,
        local_steps=R,
        grad_evals=rounds * R * K,
        params={
            "lam": lam,
            "eta": eta,
            "beta": beta,
            "R": R,
            "K": K,
            "S": S,
            "batch_size": batch_size,
            "inner_eta": inner_eta,
            "warm_start": warm_start,
            "hidden_mu": hidden_mu,
            "sample_weights": n is not None,
            "personal": personal,
        },
    )


def adaptation_batch(test, size, j):
    r"""The mini-batch objective of each client's ``j``-th test batch (``j`` ``(m,)`` ints): its
    valid test rows in order, ``size`` at a time, the last batch short, ``j`` taken modulo the
    number of batches :math:`\lceil n_i/\text{size}\rceil` (the code's ``get_next_test_batch``).
    The rows gathered with unit weights (short batches: the rest weight 0), as
    ``test.with_weights`` of the batch indicator."""
    b = MiniBatches(test, ())
    nv = b.nvalid.astype(np.int64)
    nb = -(-nv // size)
    pos = (np.asarray(j) % nb)[:, None] * size + np.arange(size)[None, :]
    ok = pos < nv[:, None]
    pos = np.where(ok, pos, 0)
    rows = pos if b.order is None else np.take_along_axis(b.order, pos, axis=-1)
    return gathered(test, rows, ok.astype(float))


def per_fedavg(
    f,
    *,
    alpha,
    beta,
    tau,
    rounds,
    S=None,
    D=None,
    D_prime=None,
    D_second=None,
    variant="first_order",
    w0=None,
    rng=None,
    sample_weights=False,
    test_adaptation=False,
    test=None,
    test_batch_size=None,
    record=None,
    keep=True,
):
    r"""Per-FedAvg, Algorithm 1 (``variant="hessian"``, eq. (8)) or its first-order variant (the
    authors' code), and the authors' conventions 3 and 5 as switches.

    Per round the server samples S clients; each takes τ steps
    :math:`\tilde w = w - \alpha\tilde\nabla f_i(w, \mathcal D)`,
    :math:`w \leftarrow w - \beta(I - \alpha\tilde\nabla^2 f_i(w, \mathcal D''))\tilde\nabla f_i(\tilde w,
    \mathcal D')` (first order: without the Hessian term); the server averages the sampled models,
    uniformly or (``sample_weights``) by sample counts.  Personalised models at round t:
    :math:`w_t - \alpha\nabla f_i(w_t)` (all training rows); ``test_adaptation`` (**test data
    used for adaptation: the test set leaks**): :math:`\theta_1 = w_t - \alpha\nabla f_i(w_t; T_{2t})`,
    :math:`\theta = \theta_1 - \beta\nabla f_i(\theta_1; T_{2t+1})`, :math:`T_j` the client's j-th
    test batch of ``test_batch_size`` rows of ``test`` (:func:`adaptation_batch`).  Returns a
    :class:`moreau.fl.History` indexed as :func:`moreau.fl.per_fedavg`'s."""
    if variant not in _VARIANTS:
        raise ValueError(f"variant must be one of {_VARIANTS} (got {variant!r})")
    if variant == "first_order" and D_second is not None:
        raise TypeError("D_second applies only to variant='hessian'")
    if test_adaptation and (test is None or test_batch_size is None):
        raise ValueError("test_adaptation needs the clients' test objective (test=) and test_batch_size")
    m, d = f.batch_shape[-1], f.dim
    S = m if S is None else int(S)
    rng = _rng(rng)
    n = _weights(f, sample_weights)
    sizes = (D, D_prime, D_second)
    batches = MiniBatches(f, ()) if any(s is not None for s in sizes) else None
    w = _start(f, w0)

    def personal_of(t, w):
        def personal():
            W = np.broadcast_to(w, (m, d))
            if not test_adaptation:
                return W - alpha * f.grad(W)
            j = np.full(m, 2 * t)
            th = W - alpha * adaptation_batch(test, test_batch_size, j).grad(W)
            return th - beta * adaptation_batch(test, test_batch_size, j + 1).grad(th)

        return personal

    gs, ls, ths = [w], [np.broadcast_to(w, (m, d))], [personal_of(0, w)()] if keep else []
    if record is not None:
        record(0, w, personal_of(0, w))
    for t in range(rounds):
        mask, idx = participation(rng, (), m, S)
        W = np.broadcast_to(w, (m, d))
        for _ in range(tau):
            fD, fD1, fD2 = (f if s is None else batches.objective(rng, s, replace=True) for s in sizes)
            w_tilde = W - alpha * fD.grad(W)
            g = fD1.grad(w_tilde)
            if variant == "hessian":
                g = g - alpha * fD2.hvp(W, g)
            W = W - beta * g
            if not np.all(np.isfinite(W)):
                raise ValueError(f"per_fedavg diverged at round {t + 1}: beta (or alpha) too large")
        W = np.where(mask[:, None], W, w[None, :])
        w = np.sum(mask[:, None] * W, axis=-2) / S if n is None else _average(W, idx, n)
        if keep:
            gs.append(w)
            ls.append(W)
            ths.append(personal_of(t + 1, w)())
        if record is not None:
            record(t + 1, w, personal_of(t + 1, w))
    return History(
        w_global=np.stack(gs) if keep else w[None],
        w_local=np.stack(ls) if keep else None,
        theta=np.stack(ths) if keep else None,
        rounds=rounds,
        local_steps=tau,
        grad_evals=2 * tau * rounds,
        params={
            "alpha": alpha,
            "beta": beta,
            "tau": tau,
            "S": S,
            "D": D,
            "D_prime": D_prime,
            "D_second": D_second,
            "variant": variant,
            "sample_weights": n is not None,
            "test_adaptation": bool(test_adaptation),
        },
    )
