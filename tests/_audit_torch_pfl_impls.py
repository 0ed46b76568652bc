"""Independent PyTorch implementations of Per-FedAvg, PerMFL and pFL^MF for
tests/test_audit_torch_pfl.py, in the shape of research code (autograd for gradients and
Hessian-vector products, an optimizer per local solve, servers averaging state_dicts), written from
the papers' update rules without moreau's code: faithful by default, each keyword a deliberate
deviation."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def model(d):
    return nn.Linear(d, 1, bias=False)


def mf_model(d, r):
    """x_i = U v_i: the shared layer's weight is U^T (r, d), the head's v_i^T (1, r)."""
    return nn.Sequential(nn.Linear(d, r, bias=False), nn.Linear(r, 1, bias=False))


def _loss(w, X, y, family):
    z = X @ w
    if family == "quadratic":
        return 0.5 * ((z - y) ** 2).mean()
    return F.softplus(-y * z).mean() + 0.05 * (w**2).sum()  # the logistic clients' ridge mu = 0.1


def _full(loader):
    (X, y), *rest = list(loader)
    assert not rest
    return X, y


def _average(models, p):
    keys = models[0].state_dict().keys()
    return {k: sum(pi * mi.state_dict()[k] for pi, mi in zip(p, models, strict=True)) for k in keys}


def per_fedavg(
    family="quadratic", *, first_order=False, hessian_factor=1.0, alpha_is_beta=False, by_samples=False
):
    """Per-FedAvg (Algorithm 1, exact gradients, the Hessian-vector product by autograd):
    ``first_order`` FO-MAML, ``hessian_factor`` the Hessian term times it, ``alpha_is_beta`` the
    inner step takes β's value, ``by_samples`` the server averages by sample counts."""

    def train(net, loader, *, global_model, alpha, beta, tau, S):
        X, y = _full(loader)
        a = beta if alpha_is_beta else alpha
        w = global_model.weight.detach().reshape(-1).clone()
        for _ in range(tau):
            w = w.requires_grad_(True)
            (g1,) = torch.autograd.grad(_loss(w, X, y, family), w, create_graph=True)
            tmp = (w - a * g1).detach().requires_grad_(True)
            (g2,) = torch.autograd.grad(_loss(tmp, X, y, family), tmp)
            g = g2
            if not first_order:
                (hv,) = torch.autograd.grad(g1 @ g2, w)  # H(w) g2
                g = g2 - hessian_factor * a * hv
            w = (w - beta * g).detach()
        with torch.no_grad():
            net.weight.copy_(w.reshape(net.weight.shape))

    def aggregate(models, weights, *, global_model, num_samples, **hyper):
        q = [float(n) for n in num_samples] if by_samples else [1.0] * len(models)
        return _average(models, [v / sum(q) for v in q])

    return train, aggregate


def permfl(*, lam_is_L=False, weight_decay=0.0, sequential=False):
    """PerMFL: devices take L SGD steps on f_i + lam/2 |theta - w_team|^2 from the team model, the
    team step w - eta (lam (w - mean theta) + gamma (w - x)), the global step
    x - beta gamma (x - mean w).  ``lam_is_L`` the device penalty is L (the authors' argument
    shift), ``weight_decay`` a hidden L2 term, ``sequential`` one mini-batch of the loader per step,
    the iterator kept across steps and rounds (the authors' get_next_train_batch)."""
    iters = {}

    def batch(loader):
        if not sequential:
            return _full(loader)
        it = iters.get(id(loader))
        try:
            return next(it) if it is not None else next(iters.setdefault(id(loader), iter(loader)))
        except StopIteration:
            iters[id(loader)] = iter(loader)
            return next(iters[id(loader)])

    def train(net, loader, *, team_model, global_model, lam, alpha, L, **_):
        net.load_state_dict(team_model.state_dict())
        anchor = team_model.weight.detach()
        pen = float(L) if lam_is_L else lam
        opt = torch.optim.SGD(net.parameters(), lr=alpha, weight_decay=weight_decay)
        for _ in range(L):
            X, y = batch(loader)
            opt.zero_grad()
            loss = 0.5 * ((net(X).squeeze(-1) - y) ** 2).mean() + pen / 2 * ((net.weight - anchor) ** 2).sum()
            loss.backward()
            opt.step()

    def team(team_model, devices, *, global_model, lam, gamma, eta, **_):
        w, x = team_model.weight, global_model.weight
        theta = sum(dv.weight.detach() for dv in devices) / len(devices)
        return {"weight": w - eta * (lam * (w - theta) + gamma * (w - x))}

    def aggregate(teams, weights, *, global_model, num_samples, beta, gamma, **_):
        x = global_model.weight
        w_bar = sum(p * t.weight for p, t in zip(weights, teams, strict=True))
        return {"weight": x - beta * gamma * (x - w_bar)}

    return train, aggregate, team


def pflmf(*, fedper=False, frozen=False, by_samples=False):
    """pFL^MF (the thesis's alternating method): tau SGD steps on the head v_i at the received U,
    then one step on the client's copy of U at the new v_i, the server averaging the copies with
    p_i (= U - eta_u sum_i p_i grad_U f_i).  ``fedper``: tau simultaneous steps on both (FedPer),
    ``frozen``: the head never trained, ``by_samples``: the server averages by sample counts."""

    def train(net, loader, *, global_model, eta_u, eta_v, tau, rank):
        X, y = _full(loader)
        shared, head = net[0].weight, net[1].weight

        def step(opt):
            opt.zero_grad()
            (0.5 * ((net(X).squeeze(-1) - y) ** 2).mean()).backward()
            opt.step()

        if fedper:
            groups = [{"params": [shared], "lr": eta_u}, {"params": [head], "lr": 0.0 if frozen else eta_v}]
            opt = torch.optim.SGD(groups)
            for _ in range(tau):
                step(opt)
            return
        if not frozen:
            opt = torch.optim.SGD([head], lr=eta_v)
            for _ in range(tau):
                step(opt)
        step(torch.optim.SGD([shared], lr=eta_u))

    def aggregate(models, weights, *, global_model, num_samples, **hyper):
        q = [float(n) for n in num_samples] if by_samples else list(weights)
        return _average(models, [v / sum(q) for v in q])

    return train, aggregate
