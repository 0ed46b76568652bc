"""The teaching demos as Jupyter notebooks (the ``notebooks`` extra): a demo's percent-format script
converts with jupytext, executes with nbclient on an ipykernel kernel of this interpreter, and shows
its figure inline (the figure is not closed before the notebook displays it); headless, the
figures are still drawn with Agg and closed (the CLI's behaviour)."""

from __future__ import annotations

import sys

import pytest

from moreau.experiments.demos import DEMOS, HERE

pytest.importorskip("matplotlib", reason="the demos draw with matplotlib (extra 'plots')")


def test_headless_runs_force_agg_and_close_figures(tmp_path):
    import matplotlib
    import matplotlib.pyplot as plt

    from moreau.experiments import _plot

    assert not _plot.shows_figures()  # pytest is no Jupyter kernel
    assert matplotlib.get_backend().lower() == "agg"
    fig, _ = _plot.figure()
    _plot.save(fig, tmp_path, "headless")  # closes the figure and restores the caller's rcParams
    assert not plt.fignum_exists(fig.number)


def _this_interpreters_kernel():
    """An ipykernel kernel manager that starts ``sys.executable -m ipykernel_launcher``: no kernel
    spec installed with ``ipykernel install`` is needed, and none of the user's can shadow it."""
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager

    class ThisInterpreter(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return KernelSpec(
                name=kernel_name,
                display_name=f"Python ({sys.executable})",
                language="python",
                argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            )

    return AsyncKernelManager(kernel_name="python3", kernel_spec_manager=ThisInterpreter())


@pytest.mark.parametrize("name", ["demo-personalisation", "demo-envelope"])
def test_demo_runs_as_a_notebook_with_inline_figures(tmp_path, monkeypatch, name):
    """demo-personalisation draws through ``_plot.save``, demo-envelope through ``envelope_demo``."""
    jupytext = pytest.importorskip("jupytext", reason="the notebooks extra: pip install -e '.[notebooks]'")
    nbclient = pytest.importorskip("nbclient", reason="the notebooks extra: pip install -e '.[notebooks]'")
    pytest.importorskip("ipykernel", reason="the notebooks extra: pip install -e '.[notebooks]'")

    script = HERE / DEMOS[name][0]
    nb = jupytext.read(script, fmt="py:percent")
    assert sum(c.cell_type == "code" for c in nb.cells) >= 2 and nb.cells[0].cell_type == "markdown"

    out = tmp_path / "figures"
    monkeypatch.setenv("MOREAU_DEMO_OUT", str(out))
    monkeypatch.delenv("MPLBACKEND", raising=False)  # ipykernel then picks the inline backend, as in Jupyter
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))  # no profile or history in $HOME
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))  # the connection file
    client = nbclient.NotebookClient(
        nb,
        km=_this_interpreters_kernel(),
        timeout=120,
        allow_errors=False,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # raises CellExecutionError on any error in a cell

    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [
        o for o in outputs if o.output_type in ("display_data", "execute_result") and "image/png" in o.data
    ]
    assert images, f"{name} displayed no inline figure: outputs {[o.output_type for o in outputs]}"
    printed = "".join(o.text for o in outputs if o.output_type == "stream" and o.name == "stdout")
    assert "holds: " in printed and "FAILS: " not in printed  # the claims, printed as on the command line
    assert list(out.glob("*.png"))  # the figure files are written as well


def test_the_documented_jupytext_execute_command_runs_a_demo(tmp_path, monkeypatch):
    """docs/reproduce.md's command, as a user types it after ``pip install -e '.[notebooks]'``:
    ``jupytext --set-kernel python3 --to notebook --execute experiments/demos/personalisation.py``
    (nbconvert executes it on the python3 kernel spec ipykernel installs; no other install)."""
    import shutil
    import subprocess

    pytest.importorskip("jupytext", reason="the notebooks extra: pip install -e '.[notebooks]'")
    pytest.importorskip("nbconvert", reason="the notebooks extra: pip install -e '.[notebooks]'")
    nbformat = pytest.importorskip("nbformat", reason="the notebooks extra: pip install -e '.[notebooks]'")

    script = tmp_path / "personalisation.py"
    shutil.copy(HERE / DEMOS["demo-personalisation"][0], script)
    monkeypatch.setenv("MOREAU_DEMO_OUT", str(tmp_path / "figures"))
    monkeypatch.delenv("MPLBACKEND", raising=False)
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    cmd = [sys.executable, "-m", "jupytext", "--set-kernel", "python3", "--to", "notebook", "--execute"]
    done = subprocess.run([*cmd, script.name], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    nb = nbformat.read(tmp_path / "personalisation.ipynb", as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "no inline figure in the executed notebook"
