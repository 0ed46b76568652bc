"""Type aliases for annotations (no runtime role).

``Array`` is ``Any`` on purpose: moreau's objectives run on numpy, cupy, array-api-strict or any
array-API library through one code path, and those arrays have no common static type (the array
API standard publishes no protocol that the libraries' annotations implement; ``numpy.typing``'s
``NDArray`` would claim numpy where a cupy array flows, and ``ArrayLike`` covers only what numpy
accepts).  So an ``Array`` annotation documents "an array of the objective's namespace" and
mypy checks everything around it.  Where a value is always a host numpy array (the fields of
``ProxInfo``, the histories' records) the annotations say ``numpy.ndarray`` instead.

``Namespace`` is an array namespace (``numpy``, ``cupy``, ``array_api_strict``, the module
``array_api_compat.array_namespace`` returns), ``DType`` one of its dtypes: neither has a static
type either.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np

__all__ = ["Array", "DType", "Namespace", "Seed"]

Array: TypeAlias = Any
Namespace: TypeAlias = Any
DType: TypeAlias = Any
# what moreau.data's generators take as their randomness (moreau.fl's algorithms: a Generator or an int)
Seed: TypeAlias = "np.random.Generator | np.random.SeedSequence | int | np.integer"
