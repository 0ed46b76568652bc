r"""The pFedMe authors' Synthetic(alpha, beta) draw, replayed (``synthetic(..., draw="authors")``).

pFedMe's Synthetic(0.5, 0.5) data set (Dinh et al. 2020, Section 5.1) was made by the authors'
script ``data/Synthetic/generate_synthetic_05_05.py`` (github.com/CharlieDinh/pFedMe), which
draws everything from numpy's legacy global state seeded once with ``np.random.seed(0)``.  A
``numpy.random.RandomState(0)`` making the same calls, in the same order and with the same
arguments, gives the same arrays; NumPy keeps the legacy ``RandomState`` streams fixed across
versions (NEP 19).  The sequence (every call on that one stream, the script's ``iid = 0`` branch):

1. sizes: ``(lognormal(4, 2, m)`` truncated to integers ``+ 50) * 5`` (``m = 100`` clients:
   250 to 25,810 samples, 205,795 in all);
2. ``u = normal(0, alpha, m)`` (the means of both ``W_k`` and ``b_k``), then
   ``B = normal(0, beta, m)``;
3. for each client in turn, ``v_k = normal(B_k, 1, d)`` (``d = 60``);
4. for each client in turn: ``W_k = normal(u_k, 1, (d, C))``, ``b_k = normal(u_k, 1, C)``
   (``C = 10``), then its ``n_k`` rows ``x = multivariate_normal(v_k, diag(j^-1.2), n_k)``;
   the label of a row is the argmax of ``softmax(x W_k + b_k)``, i.e. of ``x W_k + b_k``
   (the script takes it row by row; here one product per client: the same labels unless two
   logits tie to rounding, which did not happen for the paper's data set).

The covariance's diagonal :math:`j^{-1.2}` is computed with C's ``pow`` (``math.pow``), which
is what ``np.power`` called in 2020, when the data set was made (numpy < 1.22); numpy's SIMD
``power`` (1.22 and later, on AVX-512 machines) can be 1 ulp away (``j = 20`` on such a
machine), which moves some rows of that feature by an ulp and no label.

The script then writes, per client ``k`` (user ``"f_%05d" % k``, in this order), its rows after
an in-place ``random.shuffle`` of Python's ``random`` module, which the script never seeds, and
keeps the first ``int(0.9 n_k)`` for training (``train_data`` / ``test_data`` JSON with
``users``, ``user_data[user] = {"x", "y"}``, ``num_samples``).  That shuffle cannot be replayed,
and its 90/10 split is not the paper's stated 75/25: :func:`authors_arrays` returns each client's
rows in the order they were drawn, and :func:`moreau.data.synthetic` splits them its own way.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["AUTHORS_SEED", "authors_arrays"]

#: The seed of the authors' script (``np.random.seed(0)``, numpy's legacy global state).
AUTHORS_SEED = 0


def authors_arrays(alpha=0.5, beta=0.5, n_clients=100, n_classes=10, d=60, size_scale=5):
    r"""The arrays of the authors' Synthetic(alpha, beta) script, drawn by a ``RandomState(0)``.

    The defaults are the script's constants (100 clients, 10 classes, 60 features, sizes times
    5) and the paper's ``alpha = beta = 0.5``; other values replay the script with those
    constants edited (its ``alpha``/``beta`` alternatives (0, 0) and (1, 1) included).

    Returns a dict: ``sizes`` ``(m,)`` int64, ``u`` ``(m,)`` (the means of ``W_k`` and
    ``b_k``), ``B`` ``(m,)``, ``v`` ``(m, d)``, ``W`` ``(m, d, C)``, ``b`` ``(m, C)``, and the
    per-client lists ``x`` (``(n_k, d)`` rows in draw order) and ``y`` (``(n_k,)`` float labels
    in ``0 .. C - 1``, as the script stores them).  No validation: :func:`moreau.data.synthetic`
    checks its arguments before calling this.
    """
    rs = np.random.RandomState(AUTHORS_SEED)
    m, C = n_clients, n_classes
    sizes = (rs.lognormal(4, 2, m).astype(np.int64) + 50) * size_scale
    u = rs.normal(0, alpha, m)
    B = rs.normal(0, beta, m)
    v = np.stack([rs.normal(B[k], 1, d) for k in range(m)])
    cov = np.diag([math.pow(j, -1.2) for j in range(1, d + 1)])  # Sigma_jj = j^-1.2 by C's pow: see below
    W, b, x, y = np.empty((m, d, C)), np.empty((m, C)), [], []
    for k in range(m):
        W[k] = rs.normal(u[k], 1, (d, C))
        b[k] = rs.normal(u[k], 1, C)
        xk = rs.multivariate_normal(v[k], cov, int(sizes[k]))
        x.append(xk)
        y.append(np.argmax(xk @ W[k] + b[k], axis=-1).astype(float))
    return {"sizes": sizes, "u": u, "B": B, "v": v, "W": W, "b": b, "x": x, "y": y}
