r"""A user's federated data set for ``moreau reproduce compare --data FILE``: reading and splitting.

Two formats, one client per group of rows, clients of different sizes allowed:

* ``.npz`` (``numpy.savez``): arrays ``X_0, y_0, X_1, y_1, …`` — client k's features
  ``X_k`` ``(n_k, d)`` (numbers) and labels ``y_k`` ``(n_k,)``, k = 0, 1, … without gaps;
* ``.csv`` with a header row: a column ``client`` (the client of each row: any value, clients in
  order of first appearance), a column ``label`` (or ``y``), every other column a numeric feature.

Labels may be any values (numbers or strings): the sorted distinct labels of all clients are the
classes 0..C−1 (:func:`load` returns their names).  Every problem is a one-line ``ValueError``
naming the file and what is wrong (a missing array, a shape, a non-numeric, complex or non-finite value,
fewer than 2 classes, a client with fewer than 2 rows).

:func:`split` divides each client's rows at random (seeded) into train, validation and test.
"""

from __future__ import annotations

import csv
import hashlib
import re
import zipfile
from pathlib import Path

import numpy as np

__all__ = ["counts", "digest", "load", "split"]

_KEY = re.compile(r"^([Xy])_(\d+)$")


def digest(path) -> str:
    """sha256 of the file's bytes (a run's points carry it: resuming with changed data is refused)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise ValueError(f"--data {path}: cannot read it ({exc.strerror or exc})") from None


def load(path):
    """``(clients, classes)``: ``clients`` a list of ``(X_k (n_k, d) float, y_k (n_k,) int in
    0..C-1)``, ``classes`` the label values in class order (strings)."""
    path = Path(path)
    if path.suffix.lower() not in (".npz", ".csv"):
        raise ValueError(
            f"--data {path}: expected a .npz file (X_0, y_0, X_1, y_1, ...) or a .csv file with "
            f"'client' and 'label' columns (got suffix {path.suffix or 'none'!r})"
        )
    if not path.is_file():
        raise ValueError(f"--data {path}: no such file")
    raw = _npz(path) if path.suffix.lower() == ".npz" else _csv(path)
    small = next((k for k, (_, y) in enumerate(raw) if len(y) < 2), None)
    if small is not None:
        raise ValueError(
            f"--data {path}: client {small} has {len(raw[small][1])} row(s); every client needs at least "
            "2 (one to train, one to test)"
        )
    labels = [np.asarray(y).astype(str) for _, y in raw]
    classes = np.unique(np.concatenate(labels))
    if classes.size < 2:
        raise ValueError(
            f"--data {path}: the labels take {classes.size} value(s); a classification needs at least 2"
        )
    return [(X, np.searchsorted(classes, y)) for (X, _), y in zip(raw, labels, strict=True)], classes.tolist()


def _npz(path):
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:  # empty, truncated, not a zip
        why = (str(exc).splitlines() or [""])[0] or type(exc).__name__
        if Path(path).is_file() and Path(path).stat().st_size == 0:
            why = "the file is empty, 0 bytes"
        raise ValueError(f"--data {path}: not a readable .npz file ({why})") from None
    keys = {}
    for k in arrays:
        match = _KEY.match(k)
        if not match:
            raise ValueError(
                f"--data {path}: unexpected array {k!r}: the arrays must be named X_0, y_0, X_1, y_1, ..."
            )
        keys.setdefault(int(match.group(2)), set()).add(match.group(1))
    if not keys:
        raise ValueError(f"--data {path}: no arrays X_0, y_0, ... in it")
    clients = []
    for k in range(max(keys) + 1):
        if keys.get(k) != {"X", "y"}:
            missing = sorted({"X", "y"} - keys.get(k, set()))
            raise ValueError(
                f"--data {path}: client {k} has no {' and no '.join(f'{m}_{k}' for m in missing)} "
                "(clients are numbered 0, 1, ... without gaps, each with X_k and y_k)"
            )
        X, y = arrays[f"X_{k}"], arrays[f"y_{k}"]
        if X.ndim == 1:
            X = X[:, None]
        if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
            raise ValueError(
                f"--data {path}: client {k}: X_{k} must be (n, d) and y_{k} (n,) with the same n "
                f"(got {X.shape} and {y.shape})"
            )
        clients.append((_numeric(X, path, f"X_{k}"), y))
    return _same_width(clients, path)


def _csv(path):
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            header = [h.strip() for h in next(reader, [])]
            rows = [r for r in reader if r]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"--data {path}: not a readable CSV file ({exc})") from None
    low = [h.lower() for h in header]
    label = "label" if "label" in low else "y" if "y" in low else None
    if "client" not in low or label is None:
        raise ValueError(
            f"--data {path}: the header must name a 'client' column and a 'label' (or 'y') column "
            f"(got {header})"
        )
    ci, li = low.index("client"), low.index(label)
    fi = [j for j in range(len(header)) if j not in (ci, li)]
    if not fi:
        raise ValueError(f"--data {path}: no feature columns besides 'client' and '{header[li]}'")
    bad = next((n for n, r in enumerate(rows, start=2) if len(r) != len(header)), None)
    if bad is not None:
        raise ValueError(
            f"--data {path}: line {bad} has {len(rows[bad - 2])} fields; the header has {len(header)}"
        )
    if not rows:
        raise ValueError(f"--data {path}: no data rows after the header")
    cells = np.array(rows, dtype=object)
    try:
        X = cells[:, fi].astype(float)
    except ValueError:
        j = next(j for j in fi if not all(_is_number(c) for c in cells[:, j]))
        line = next(n for n, c in enumerate(cells[:, j], start=2) if not _is_number(c))
        raise ValueError(
            f"--data {path}: feature column {header[j]!r} is not numeric (line {line}: "
            f"{cells[line - 2, j]!r})"
        ) from None
    X = _numeric(X, path, "the features")
    who = cells[:, ci].astype(str)
    names, first = np.unique(who, return_index=True)
    order = names[np.argsort(first)]
    return [(X[who == c], cells[who == c, li].astype(str)) for c in order]


def _is_number(text) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _numeric(X, path, what):
    if np.iscomplexobj(X):  # numpy would drop the imaginary parts with a ComplexWarning
        raise ValueError(
            f"--data {path}: {what} must be real numbers (got complex values, dtype {np.asarray(X).dtype})"
        )
    try:
        X = np.asarray(X, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"--data {path}: {what} must be numbers (got dtype {np.asarray(X).dtype})") from None
    if not np.all(np.isfinite(X)):
        raise ValueError(
            f"--data {path}: {what} hold {int(np.sum(~np.isfinite(X)))} NaN or infinite value(s)"
        )
    return X


def _same_width(clients, path):
    widths = {X.shape[1] for X, _ in clients}
    if len(widths) > 1:
        raise ValueError(f"--data {path}: the clients have different numbers of features: {sorted(widths)}")
    return clients


def counts(n, test_fraction, validation_fraction):
    """``(n_test, n_validation)`` of a client of ``n`` >= 2 rows (the rest, at least 1, trains)."""
    n_test = min(max(1, int(np.floor(test_fraction * n))), n - 1)
    return n_test, min(int(np.floor(validation_fraction * (n - n_test))), n - n_test - 1)


def split(rng, clients, test_fraction, validation_fraction):
    r"""Each client's rows at random into ``(train, validation, test)`` lists of ``(X, y)``:
    :math:`\lfloor\text{test\_fraction}\, n_k\rfloor` test rows (at least 1, at most n_k − 1), then
    :math:`\lfloor\text{validation\_fraction}\cdot\text{rest}\rfloor` validation rows, the rest
    (at least 1) for training.  One permutation per client from ``rng``, clients in turn."""
    parts = ([], [], [])
    for k, (X, y) in enumerate(clients):
        n = len(y)
        if n < 2:
            raise ValueError(
                f"client {k} has {n} row(s): every client needs at least 2 (one to train, one to test)"
            )
        perm = rng.permutation(n)
        n_test, n_val = counts(n, test_fraction, validation_fraction)
        for part, idx in zip(
            parts, (perm[n_test + n_val :], perm[n_test : n_test + n_val], perm[:n_test]), strict=True
        ):
            part.append((X[idx], y[idx]))
    return parts
