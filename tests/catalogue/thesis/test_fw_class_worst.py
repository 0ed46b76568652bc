"""fw.convex's recorded class worst cases (``analysis/thesis/fw/class_worst.py``) and the gap every default
run states beside them (``moreau.analysis.engine.class_worst``): the PEP values recomputed (marker ``pep``),
the instances' LHS/RHS at iterate t recomputed by an independent Frank–Wolfe (numpy, scipy for F*)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from moreau.analysis.engine.class_worst import ClassWorst, gap_line
from moreau.analysis.thesis.fw.class_worst import PEP_QUADRATIC, PEP_SMOOTH_CONVEX


@pytest.fixture(scope="module")
def record():
    from moreau.analysis.engine import runner

    (rec,) = runner.run(["fw.convex"], "quadratic")
    return rec


def _lmo(g, h, kind):
    r = h[0]
    if kind == 0:  # box [-h, h]
        return -h * np.sign(g)
    if kind == 1:  # Euclidean ball of radius r
        return -r * g / np.linalg.norm(g)
    e = np.zeros_like(g)
    if kind == 2:  # simplex {x >= 0, sum x = r}
        e[np.argmin(g)] = r
        return e
    i = np.argmax(np.abs(g))  # l1 ball of radius r
    e[i] = -r * np.sign(g[i])
    return e


def _diameter(h, kind):
    return 2 * np.linalg.norm(h) if kind == 0 else (np.sqrt(2) * h[0] if kind == 2 else 2 * h[0])


def _f_star(A, b, h, kind):
    d = b.size
    f = lambda x: 0.5 * x @ A @ x - b @ x  # noqa: E731
    jac = lambda x: A @ x - b  # noqa: E731
    if kind == 0:
        res = minimize(f, np.zeros(d), jac=jac, bounds=[(-v, v) for v in h], method="L-BFGS-B", tol=1e-15)
        return res.fun
    r = h[0]
    cons = {
        1: {"type": "ineq", "fun": lambda x: r**2 - x @ x},
        2: {"type": "eq", "fun": lambda x: np.sum(x) - r},
        3: {"type": "ineq", "fun": lambda x: r - np.sum(np.sqrt(x**2 + 1e-300))},
    }[kind]
    bounds = [(0, None)] * d if kind == 2 else None
    x0 = np.full(d, r / d) if kind == 2 else np.zeros(d)
    best = np.inf
    for start in (x0, -x0 + 1e-3):
        res = minimize(f, start, jac=jac, constraints=[cons], bounds=bounds, method="SLSQP", tol=1e-15)
        best = min(best, res.fun)
    return best


def _ratio_at(batch, i, t0):
    A, b, h, x = (np.asarray(batch[k][i], float) for k in ("A", "b", "h", "x0"))
    kind = int(batch["set"][i]) if "set" in batch else 0
    for t in range(t0):
        x = x + 2 / (t + 2) * (_lmo(A @ x - b, h, kind) - x)
    L = np.linalg.eigvalsh(A)[-1]
    R = _diameter(h, kind)
    gap = 0.5 * x @ A @ x - b @ x - _f_star(A, b, h, kind)
    return gap / (2 * L * R**2 / (t0 + 2))


def test_the_default_run_states_the_gap_from_its_own_instances(record):
    gaps = {g["label"]: g for g in record.class_worst}
    assert set(gaps) == {f"t = {t}" for t in range(1, 6)}
    for t in (2, 3, 4, 5):
        g = gaps[f"t = {t}"]
        assert g["class_worst"] == PEP_SMOOTH_CONVEX[t] and g["reading"] == "x⁰ ∈ B, t ≥ 1"
        # instances of the class never exceed its worst case; on boxes and balls in d = 3 they stay far below
        assert 0 < g["instances_reach"] < g["class_worst"] and g["gap"] > 0.3
        assert g["gap"] == pytest.approx(1 - g["instances_reach"] / g["class_worst"])
        # independent: the reported instance's ratio at iterate t, by a Frank–Wolfe of our own and scipy's F*
        got = _ratio_at(record.batch, g["instance"], t)
        assert got == pytest.approx(g["instances_reach"], rel=1e-5, abs=1e-9)
    line = gap_line("quadratic", record.class_worst)
    for g in record.class_worst:  # each number of the line is the record's
        assert f"{g['label']} {g['instances_reach']:.3g}/{g['class_worst']:.3g}" in line
    assert "not a quadratic" in line and "class_worst.py" in line


def test_a_recorded_value_without_its_source_is_refused():
    with pytest.raises(ValueError, match="source and why"):
        ClassWorst("t = 2", "part", 0.6, "", "why")
    with pytest.raises(ValueError, match="positive number"):
        ClassWorst("t = 2", "part", float("nan"), "src", "why")


@pytest.mark.pep
@pytest.mark.parametrize("t", [1, 2, 3, 4, 5])
def test_recorded_pep_values_are_recomputed(t):
    pytest.importorskip("PEPit", reason="needs the pep extra (pip install -e '.[pep]')")
    pytest.importorskip("clarabel", reason="needs the pep extra (pip install -e '.[pep]')")
    from moreau.analysis.pep import classes as C

    v, _, _ = C.frank_wolfe(1.0, 1.0, t)
    assert v / (2 / (t + 2)) == pytest.approx(PEP_SMOOTH_CONVEX[t], rel=1e-6)  # solver tolerance ~1e-8
    vq, _, _ = C.frank_wolfe(1.0, 1.0, t, cls="quadratic", accept=("optimal", "optimal_inaccurate"))
    assert vq / (2 / (t + 2)) == pytest.approx(PEP_QUADRATIC[t], rel=1e-4)  # an inaccurate solve is accepted
