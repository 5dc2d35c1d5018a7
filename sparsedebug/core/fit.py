"""Small least-squares solvers in numpy (no scipy at the CLI's start): non-negative least squares and Levenberg-Marquardt.

- :func:`nnls`: Lawson and Hanson's active-set method (as ``scipy.optimize.nnls``):
  minimise ``||A x - b||`` subject to ``x >= 0``; each inner step is an unconstrained
  least-squares solve on the columns of the passive set.
- :func:`levenberg_marquardt`: minimise ``0.5 * ||r(x)||^2`` from ``x0`` with a
  forward-difference Jacobian, Marquardt's scaling by the diagonal of ``J^T J`` (the
  largest seen so far, as MINPACK's ``lmdif``) and Nielsen's damping update; it stops
  on MINPACK's tolerances (relative cost reduction, relative step, gradient) or after
  ``100 * (n + 1)`` residual evaluations. Deterministic: no randomness, fixed start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sparsedebug.core.errors import InternalError

F64 = npt.NDArray[np.float64]


def nnls(a: npt.ArrayLike, b: npt.ArrayLike) -> tuple[F64, float]:
    """The non-negative least-squares solution of ``a x = b`` and its residual norm (Lawson-Hanson active set)."""
    A = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if A.ndim != 2 or y.shape != (A.shape[0],):
        raise InternalError(f"nnls: a of shape {A.shape} and b of shape {y.shape} do not make a system")
    n = A.shape[1]
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    tol = 10.0 * np.finfo(np.float64).eps * max(A.shape) * (float(np.abs(A).sum(axis=0).max()) if A.size else 0.0)
    w = A.T @ (y - A @ x)
    steps = 0
    while not passive.all() and float(np.max(np.where(passive, -np.inf, w))) > tol:
        passive[int(np.argmax(np.where(passive, -np.inf, w)))] = True
        while True:
            steps += 1
            if steps > 3 * n + 30:
                raise InternalError("nnls: the active-set iteration did not converge")
            s = np.zeros(n)
            s[passive] = np.linalg.lstsq(A[:, passive], y, rcond=None)[0]
            if float(s[passive].min()) > 0.0:
                break
            shrink = passive & (s <= 0.0)
            alpha = float(np.min(x[shrink] / (x[shrink] - s[shrink])))
            x = x + alpha * (s - x)
            passive &= x > tol
            x[~passive] = 0.0
        x = s
        w = A.T @ (y - A @ x)
    return x, float(np.linalg.norm(A @ x - y))


@dataclass(frozen=True)
class Fit:
    """What :func:`levenberg_marquardt` found: the parameters, the final cost ``0.5 * ||r||^2`` and the evaluations used."""

    x: F64
    cost: float
    evaluations: int


def _jacobian(residual: Callable[[F64], F64], x: F64, r: F64) -> F64:
    """Forward differences with MINPACK's step ``sqrt(eps) * |x_j|`` (``sqrt(eps)`` at zero)."""
    step0 = float(np.sqrt(np.finfo(np.float64).eps))
    jac = np.empty((r.size, x.size))
    for j in range(x.size):
        h = step0 * abs(float(x[j])) or step0
        shifted = x.copy()
        shifted[j] += h
        jac[:, j] = (residual(shifted) - r) / h
    return jac


def levenberg_marquardt(
    residual: Callable[[F64], F64], x0: npt.ArrayLike, *, ftol: float = 1e-8, xtol: float = 1e-8, gtol: float = 1e-8
) -> Fit:
    """Minimise ``0.5 * ||residual(x)||^2`` from ``x0`` (see the module docstring)."""
    x = np.asarray(x0, dtype=np.float64).copy()
    r = residual(x)
    cost = 0.5 * float(r @ r)
    evaluations, budget = 1, 100 * (x.size + 1)
    scale = np.zeros(x.size)
    damping: float | None = None
    growth = 2.0
    while evaluations < budget:
        jac = _jacobian(residual, x, r)
        evaluations += x.size
        gradient = jac.T @ r
        if float(np.max(np.abs(gradient))) <= gtol * max(1.0, float(np.linalg.norm(r))):
            break
        normal = jac.T @ jac
        scale = np.maximum(scale, np.diag(normal))
        diag = np.where(scale > 0.0, scale, 1.0)
        if damping is None:
            damping = 1e-3 * float(diag.max())
        while evaluations < budget:
            step = np.linalg.solve(normal + damping * np.diag(diag), -gradient)
            trial = x + step
            r_trial = residual(trial)
            evaluations += 1
            cost_trial = 0.5 * float(r_trial @ r_trial)
            predicted = 0.5 * float(step @ (damping * diag * step - gradient))
            gain = (cost - cost_trial) / predicted if predicted > 0.0 else -1.0
            if gain > 0.0 and np.isfinite(cost_trial):
                reduction = cost - cost_trial
                x, r, cost = trial, r_trial, cost_trial
                damping *= max(1.0 / 3.0, 1.0 - (2.0 * gain - 1.0) ** 3)
                growth = 2.0
                small_step = float(np.linalg.norm(step)) <= xtol * (float(np.linalg.norm(x)) + xtol)
                if reduction <= ftol * max(cost + reduction, np.finfo(np.float64).tiny) or small_step:
                    return Fit(x, cost, evaluations)
                break
            damping *= growth
            growth *= 2.0
            if float(np.linalg.norm(step)) <= xtol * (float(np.linalg.norm(x)) + xtol):
                return Fit(x, cost, evaluations)
    return Fit(x, cost, evaluations)
