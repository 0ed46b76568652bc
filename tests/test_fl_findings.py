"""The smallest instances of what the algorithms reach instead of their targets (reported findings).

One dimension, two clients f_i(w) = a_i w^2/2 - b_i w with a = (1, 3), b = (1, -3) (minimisers
c = (1, -1)), uniform weights, exact gradients and proxes, full participation.  The fractions are
worked out by hand in the comments; the runs must land on them.
"""

import numpy as np
import pytest
from _tol import assert_close

import moreau as mo
from moreau import fl

Q = mo.Quadratic(np.array([[[1.0]], [[3.0]]]), np.array([[1.0], [-3.0]]))


def test_pfedme_R2_stops_at_minus_one_ninth():
    # lam = 1: envelope curvatures H = lam a/(lam + a) = (1/2, 3/4); w* solves sum H_i (w - c_i) = 0: -1/5.
    # R = 2, eta = 1: sum (1 - (1 - H_i)^2)(w - c_i) = 0 with weights (3/4, 15/16): w = -1/9.
    assert_close(fl.fedprox_optimum(Q, 1.0)[0], [-1 / 5])
    assert_close(fl.pfedme(Q, lam=1.0, eta=1.0, beta=1.0, R=2, rounds=200).w_global[-1], [-1 / 9])
    assert_close(fl.pfedme(Q, lam=1.0, eta=1.0, beta=1.0, R=1, rounds=200).w_global[-1], [-1 / 5])


def test_fedavg_tau2_stops_at_minus_four_elevenths():
    # GlobalTrain: (1 - 3)/(1 + 3) = -1/2.  tau = 2, eta = 1/4: weights 1 - (1 - eta a_i)^2 = (7/16, 15/16):
    # w = (7/16 - 15/16)/(22/16) = -4/11.
    assert_close(fl.global_train(Q), [-1 / 2])
    assert_close(fl.fedavg(Q, eta=0.25, tau=2, rounds=400).w_global[-1], [-4 / 11])


@pytest.mark.parametrize(
    "variant, tau, expected",
    [
        ("hessian", 1, 1 / 7),  # (1 - alpha a)^2 a = (16/25, 12/25): w = (16 - 12)/(16 + 12) = 1/7
        ("first_order", 1, -1 / 5),  # a (1 - alpha a) = (4/5, 6/5): w = (4 - 6)/(4 + 6) = -1/5
        ("hessian", 2, 37 / 275),  # 1 - (1 - G_i/5)^2 = (3744, 2856)/15625: w = (3744 - 2856)/(3744 + 2856)
    ],
)
def test_per_fedavg_alpha_one_fifth(variant, tau, expected):
    h = fl.per_fedavg(Q, alpha=0.2, beta=0.2, tau=tau, rounds=2000, variant=variant)
    assert_close(h.w_global[-1], [expected])
