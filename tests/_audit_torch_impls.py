"""Independent PyTorch implementations of FedAvg and FedProx for tests/test_audit_torch.py, in the
shape of research code (an optimizer per local solve, a loss over DataLoader batches, a server
averaging state_dicts): faithful by default, each keyword a deliberate deviation."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def model(d):
    return nn.Linear(d, 1, bias=False)


def loss_fn(family, mu, total=False):
    """The client loss as the paper writes it (mean over samples; ``total``: summed)."""

    def loss(net, X, y):
        z = net(X).squeeze(-1)
        if family == "quadratic":
            per = 0.5 * (z - y) ** 2
        else:
            per = F.softplus(-y * z)
        data = per.sum() if total else per.mean()
        ridge = sum((p**2).sum() for p in net.parameters())
        return data + (len(y) if total else 1) * mu / 2 * ridge

    return loss


def _weighted(models, p):
    keys = models[0].state_dict().keys()
    return {k: sum(pi * mi.state_dict()[k] for pi, mi in zip(p, models, strict=True)) for k in keys}


def fedavg(family="quadratic", *, weight_decay=0.0, total=False, by_samples=False, momentum=0.0):
    mu = 0.1 if family == "logistic" else 0.0
    loss = loss_fn(family, mu, total)

    def train(net, loader, *, global_model, eta, tau, S):
        net.load_state_dict(global_model.state_dict())  # the server sends its model
        opt = torch.optim.SGD(net.parameters(), lr=eta, weight_decay=weight_decay, momentum=momentum)
        for _ in range(tau):
            for X, y in loader:
                opt.zero_grad()
                loss(net, X, y).backward()
                opt.step()

    def aggregate(models, weights, *, global_model, num_samples, **hyper):
        p = num_samples if by_samples else weights
        s = sum(p)
        return _weighted(models, [pi / s for pi in p])

    return train, aggregate


def fedprox(family="quadratic", *, weight_decay=0.0, reset=False, by_samples=False):
    """FedProx as moreau.fl.fedprox prints it: the local model warm-starts from its last round."""
    mu = 0.1 if family == "logistic" else 0.0
    loss = loss_fn(family, mu)

    def train(net, loader, *, global_model, lam, gamma, eta, K):
        if reset:
            net.load_state_dict(global_model.state_dict())
        opt = torch.optim.SGD(net.parameters(), lr=eta, weight_decay=weight_decay)
        for _ in range(K):
            for X, y in loader:
                opt.zero_grad()
                prox = sum(
                    ((p - g) ** 2).sum()
                    for p, g in zip(net.parameters(), global_model.parameters(), strict=True)
                )
                (loss(net, X, y) + lam / 2 * prox).backward()
                opt.step()

    def aggregate(models, weights, *, global_model, num_samples, lam, gamma, eta, K):
        p = num_samples if by_samples else weights
        s = sum(p)
        w = global_model.state_dict()
        return {
            k: w[k]
            - gamma
            * sum(pi / s * lam * (w[k] - mi.state_dict()[k]) for pi, mi in zip(p, models, strict=True))
            for k in w
        }

    return train, aggregate
