# SPDX-License-Identifier: MIT
"""Latency/bandwidth (alpha/beta) models of communication times, fitted on relative error.

A point is (size, a, b, t): a measured time t modelled as alpha * a + beta * b. For a message or a
reduction of n bytes a = 1 and b = n (t = alpha + beta * n); for the gradient buckets a = the
bucket count and b = the gradient's bytes (alpha per bucket, beta per byte). `size` orders the
points and names the range a regime covers.

One line rarely fits 4 B to 64 MiB (eager and rendezvous protocols, caches), so the sweep is cut
into up to `max_regimes` contiguous regimes, each fitted on its own; the cuts are the breakpoints
that minimise the total squared relative error (exhaustively, by dynamic programming). A further
cut is taken only while the current fit misses some point by more than `tolerance` and the cut
at least halves the total error. The fit minimises sum(((alpha * a + beta * b) - t) / t)^2 with
alpha >= 1 ns and beta >= 1e-12 s/byte (1 TB/s): where the data cannot resolve a term (a regime
of large messages hardly constrains alpha) it stays at that floor instead of going negative, so
every coefficient is finite and positive. Standard library only; running this file checks that
known models are recovered from synthetic sweeps.
"""
import math

ALPHA_FLOOR = 1e-9   # s
BETA_FLOOR = 1e-12   # s per byte
MIN_POINTS = 3       # per regime


class Line:
    """alpha * a + beta * b over the points with sizes from `low` to `high`, and how well it fits."""

    def __init__(self, alpha, beta, points):
        self.alpha, self.beta = alpha, beta
        self.low, self.high = points[0][0], points[-1][0]
        self.count = len(points)
        errors = [abs(self.time(a, b) - t) / t for _, a, b, t in points]
        self.mean_rel_error = sum(errors) / len(errors)
        self.max_rel_error = max(errors)
        self.squared_error = sum(e * e for e in errors)

    def time(self, a, b):
        return self.alpha * a + self.beta * b


def _objective(alpha, beta, rows):
    return sum((alpha * u + beta * v - 1.0) ** 2 for u, v in rows)


def fit_line(points):
    """The bounded least-squares Line through `points` [(size, a, b, t)], sorted by size."""
    rows = [(a / t, b / t) for _, a, b, t in points]  # relative error: alpha * u + beta * v - 1
    suu = sum(u * u for u, _ in rows)
    svv = sum(v * v for _, v in rows)
    suv = sum(u * v for u, v in rows)
    su = sum(u for u, _ in rows)
    sv = sum(v for _, v in rows)
    candidates = [(ALPHA_FLOOR, BETA_FLOOR)]
    # Columns scaled to unit norm before solving: u and v differ by many orders of magnitude.
    cu, cv = math.sqrt(suu) or 1.0, math.sqrt(svv) or 1.0
    det = (suu / cu ** 2) * (svv / cv ** 2) - (suv / (cu * cv)) ** 2
    if abs(det) > 1e-12:
        alpha = ((su / cu) * (svv / cv ** 2) - (sv / cv) * (suv / (cu * cv))) / det / cu
        beta = ((sv / cv) * (suu / cu ** 2) - (su / cu) * (suv / (cu * cv))) / det / cv
        if alpha >= ALPHA_FLOOR and beta >= BETA_FLOOR:
            candidates.append((alpha, beta))
    if svv > 0:  # alpha at its floor, the best beta
        candidates.append((ALPHA_FLOOR, max(BETA_FLOOR, (sv - ALPHA_FLOOR * suv) / svv)))
    if suu > 0:  # beta at its floor, the best alpha
        candidates.append((max(ALPHA_FLOOR, (su - BETA_FLOOR * suv) / suu), BETA_FLOOR))
    alpha, beta = min(candidates, key=lambda c: _objective(c[0], c[1], rows))
    return Line(alpha, beta, points)


def _best_partition(points, regimes, min_points):
    """The lowest-error split of `points` into `regimes` contiguous Lines, or None."""
    n = len(points)
    cache = {}

    def line(i, j):
        if (i, j) not in cache:
            cache[(i, j)] = fit_line(points[i:j])
        return cache[(i, j)]

    # best[r][j]: (error, lines) of the first j points in r regimes
    best = [{0: (0.0, [])}] + [{} for _ in range(regimes)]
    for r in range(1, regimes + 1):
        for j in range(r * min_points, n + 1):
            options = [(best[r - 1][i][0] + line(i, j).squared_error, best[r - 1][i][1] + [line(i, j)])
                       for i in best[r - 1] if j - i >= min_points]
            if options:
                best[r][j] = min(options, key=lambda o: o[0])
    return best[regimes].get(n, (None, None))[1]


def fit_regimes(points, max_regimes=3, tolerance=0.15, min_points=MIN_POINTS):
    """Lines over contiguous regimes of `points` [(size, a, b, t)] (see the module's docstring)."""
    points = sorted(points)
    if not points:
        return []
    lines = [fit_line(points)]
    for regimes in range(2, max_regimes + 1):
        if max(l.max_rel_error for l in lines) <= tolerance:
            break
        split = _best_partition(points, regimes, min_points)
        if not split or sum(l.squared_error for l in split) > 0.5 * sum(l.squared_error for l in lines):
            break
        lines = split
    return lines


def regime_for(lines, size):
    """The line whose regime covers `size` (the first reaching it; the last beyond the sweep)."""
    for line in lines:
        if size <= line.high:
            return line
    return lines[-1]


def _self_test():
    """Recovers known models from exact synthetic sweeps (the CTest hpf.bench.comm.fit_synthetic)."""
    sizes = [2 ** k for k in range(2, 27)]
    eager = [(n, 1, n, 5e-7 + n / 5e9) for n in sizes if n <= 4096]
    rendezvous = [(n, 1, n, 3e-6 + n / 10e9) for n in sizes if n > 4096]
    lines = fit_regimes(eager + rendezvous)
    assert [(l.low, l.high) for l in lines] == [(4, 4096), (8192, 2 ** 26)], [(l.low, l.high) for l in lines]
    for line, (alpha, beta) in zip(lines, ((5e-7, 1 / 5e9), (3e-6, 1 / 10e9))):
        assert abs(line.alpha / alpha - 1) < 1e-6 and abs(line.beta / beta - 1) < 1e-6, (line.alpha, line.beta)
        assert line.max_rel_error < 1e-9
    flat = fit_line([(n, 1, n, 1e-6) for n in (4, 8, 16)])  # no size dependence: beta at its floor
    assert flat.beta == BETA_FLOOR and abs(flat.alpha / 1e-6 - 1) < 1e-3, (flat.alpha, flat.beta)
    gradient = 1 << 20  # buckets: alpha per bucket, beta per gradient byte
    buckets = fit_regimes([(b, gradient // b, gradient, 2e-5 * (gradient // b) + gradient / 2e9)
                           for b in (4096, 8192, 16384, 32768)])
    assert len(buckets) == 1 and abs(buckets[0].alpha / 2e-5 - 1) < 1e-6 and abs(buckets[0].beta * 2e9 - 1) < 1e-6
    print("alpha_beta: synthetic sweeps recovered")


if __name__ == "__main__":
    _self_test()
