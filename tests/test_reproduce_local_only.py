"""Issue 29: the local-only baseline beside the personalisation experiments, and ``--list``'s cut."""

from __future__ import annotations

import numpy as np
import pytest

from moreau.experiments import _pfedme_runs as runs
from moreau.experiments.cli import cut_words
from moreau.experiments.registry import experiments


def test_local_only_is_full_batch_gradient_descent_per_client_without_communication():
    rng = np.random.default_rng(0)
    m, n, D, C = 3, 7, 4, 3
    X = rng.normal(size=(m, n, D))
    y = rng.integers(0, C, size=(m, n))
    Y = (y[..., None] == np.arange(C)).astype(float)
    sizes = np.array([7, 5, 6])
    f = runs.objective(X, Y, sizes, 0.1)  # moreau.Multinomial: an independent gradient
    W = runs.local_only(np.random.default_rng(1), X, Y, sizes, 0.1, eta=0.3, tau=3, rounds=2, B=None)
    ref = np.zeros((m, D * C))
    for _ in range(2 * 3):
        ref = ref - 0.3 * np.asarray(f.grad(ref))
    np.testing.assert_allclose(W, ref, rtol=1e-12, atol=1e-14)
    # no communication: a client's model does not depend on another client's data
    X2 = X.copy()
    X2[0] += 1.0
    W2 = runs.local_only(np.random.default_rng(1), X2, Y, sizes, 0.1, eta=0.3, tau=3, rounds=2, B=None)
    np.testing.assert_array_equal(W2[1:], W[1:])
    assert not np.allclose(W2[0], W[0])


@pytest.mark.parametrize("name", ["pfedme-synthetic", "pfedme-digits", "permfl-digits"])
def test_personalisation_experiments_list_the_local_only_baseline(name):
    import importlib

    module = importlib.import_module(experiments()[name].compute.__module__)
    shown = getattr(module, "METHODS", ())
    if name.startswith("pfedme"):
        from moreau.experiments._pfedme_compare import SHOWN as shown
    assert "Local only" in shown


def test_cut_words_ends_at_a_word_boundary():
    text = "FedProx analysis, Figure 1(b) (MNIST-Logit; digits stand-in)"
    out = cut_words(text, 44)
    assert len(out) <= 44 and out.endswith("…")
    stem = out[:-1]
    assert text.startswith(stem) and text[len(stem)] in " ,;("
    assert cut_words("short", 44) == "short"
    assert cut_words("a" * 50, 10) == "a" * 9 + "…"  # one long word: cut inside it


def test_list_column_is_never_cut_mid_word(capsys):
    from moreau import _cli

    assert _cli.main(["reproduce", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    table = experiments()
    assert len(lines) == len(table)
    for line, e in zip(lines, table.values(), strict=True):
        full, cell = e.paper + ", " + e.figure, line[28:72].rstrip()
        if cell != full:
            stem = cell[:-1]
            assert cell.endswith("…") and full.startswith(stem) and full[len(stem)] in " ,;(", (cell, full)
