"""Wilson score interval for a binomial proportion.

Campaigns run few trials per configuration and failure rates sit near 0 or 1, exactly
where the textbook normal (Wald) interval collapses to zero width or leaves [0, 1].
The Wilson interval stays inside [0, 1] and keeps sensible width at 0/n and n/n.
"""

from __future__ import annotations

import math

Z_95 = 1.959963984540054
"""Two-sided 95% standard normal quantile, so callers need not import scipy."""


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """Return the (low, high) Wilson score interval for successes out of trials.

    With no trials nothing is known, so the honest answer is the whole range (0.0, 1.0).
    """
    if isinstance(successes, bool) or not isinstance(successes, int):
        raise TypeError(f"successes must be an int, got {successes!r}")
    if isinstance(trials, bool) or not isinstance(trials, int):
        raise TypeError(f"trials must be an int, got {trials!r}")
    if trials < 0:
        raise ValueError(f"trials must be >= 0, got {trials}")
    if successes < 0:
        raise ValueError(f"successes must be >= 0, got {successes}")
    if successes > trials:
        raise ValueError(f"successes ({successes}) cannot exceed trials ({trials})")
    if not math.isfinite(z) or z <= 0:
        raise ValueError(f"z must be a positive finite number, got {z}")
    if trials == 0:
        return (0.0, 1.0)

    n = float(trials)
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denom
    half = (z / denom) * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    # The bounds are exactly 0 and 1 at the extremes; pin them so rounding noise
    # (e.g. 1e-17) does not show up as "a tiny but non-zero failure rate".
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return (low, high)
