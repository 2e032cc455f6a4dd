# SPDX-License-Identifier: MIT
"""Line and scatter plots as hand-written SVG, for benchmark runners on machines without
matplotlib: linear or logarithmic axes, ticks with grid lines, a legend, measured points (markers)
and fitted curves (lines, dashed or solid). Standard library only.

    plot = Plot("Latency", "message size", "time (us)", x_ticks=byte_ticks(4, 2**26))
    plot.points("2 ranks", [(4, 1.2), (8, 1.3)], color=COLORS[0], marker="circle")
    plot.line("2 ranks, fit", [(4, 1.1), (2**26, 9000)], color=COLORS[0], dash="6,3")
    plot.write("latency.svg")
"""
import math
from xml.sax.saxutils import escape

# Colour-blind-safe palette (Okabe and Ito).
COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
MARKERS = ("circle", "square", "triangle", "diamond")


def si_label(value):
    """1, 10, 100, 1k, 10k, 1M, ... and 0.1, 0.01 ... for tick labels."""
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:g}{suffix}"
    return f"{value:g}"


def byte_label(value):
    """4 B, 1 KiB, 64 MiB ..."""
    for factor, suffix in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if value >= factor:
            return f"{value / factor:g} {suffix}"
    return f"{value:g} B"


def byte_ticks(low, high, step=4):
    """(value, label) ticks at powers of `step` (a power of two) from `low` to `high` bytes."""
    ticks, value = [], 1
    while value <= high:
        if value >= low:
            ticks.append((value, byte_label(value)))
        value *= step
    return ticks


def decade_ticks(low, high, label=si_label):
    """(value, label) at every power of ten from below `low` to above `high`."""
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    return [(10.0 ** k, label(10.0 ** k)) for k in range(first, last + 1)]


def linear_ticks(low, high, count=6, label=si_label):
    """(value, label) at a round step (1, 2 or 5 x 10^k) giving about `count` ticks."""
    raw = (high - low) / max(1, count - 1) or 1.0
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    start = math.ceil(low / step) * step
    return [(start + k * step, label(start + k * step)) for k in range(int((high - start) / step + 1e-9) + 1)]


class Plot:
    """One chart: add point series and line series, then svg() or write(path)."""

    def __init__(self, title, x_label, y_label, log_x=True, log_y=True, x_ticks=None, y_ticks=None,
                 width=820, height=480):
        self.title, self.x_label, self.y_label = title, x_label, y_label
        self.log_x, self.log_y = log_x, log_y
        self.x_ticks, self.y_ticks = x_ticks, y_ticks
        self.width, self.height = width, height  # the whole image, legend included
        self.series = []  # (kind, name, points, color, style)
        self.margin = {"left": 78, "right": 0, "top": 40, "bottom": 56}

    # A series named None is drawn but left out of the legend (a second piece of a fitted curve).
    def points(self, name, xy, color=COLORS[0], marker="circle"):
        self.series.append(("points", name, self._usable(xy), color, marker))

    def line(self, name, xy, color=COLORS[0], dash=None):
        self.series.append(("line", name, self._usable(xy), color, dash))

    def write(self, path):
        with open(path, "w") as f:
            f.write(self.svg())

    # --- geometry ---------------------------------------------------------------------------------
    def _usable(self, xy):
        """Finite points (positive where an axis is logarithmic)."""
        return [(float(x), float(y)) for x, y in xy
                if math.isfinite(x) and math.isfinite(y) and (x > 0 or not self.log_x) and (y > 0 or not self.log_y)]

    def _range(self, values, log, ticks):
        values = list(values) + [v for v, _ in ticks or []]
        low, high = (min(values), max(values)) if values else (1.0, 10.0)
        if log:
            low, high = math.log10(low), math.log10(high)
        if high == low:
            low, high = low - 0.5, high + 0.5
        pad = 0.03 * (high - low)
        return low - pad, high + pad

    def _layout(self):
        xs = [x for s in self.series for x, _ in s[2]]
        ys = [y for s in self.series for _, y in s[2]]
        if not self.y_ticks and ys:
            lo, hi = min(ys), max(ys)
            self.y_ticks = decade_ticks(lo, hi) if self.log_y else linear_ticks(min(0.0, lo), hi)
        if not self.x_ticks and xs:
            lo, hi = min(xs), max(xs)
            self.x_ticks = decade_ticks(lo, hi) if self.log_x else linear_ticks(min(0.0, lo), hi)
        self.x_range = self._range(xs, self.log_x, self.x_ticks)
        self.y_range = self._range(ys, self.log_y, self.y_ticks)

    def _x(self, x):
        v = math.log10(x) if self.log_x else x
        lo, hi = self.x_range
        m = self.margin
        return m["left"] + (v - lo) / (hi - lo) * (self.width - m["left"] - m["right"])

    def _y(self, y):
        v = math.log10(y) if self.log_y else y
        lo, hi = self.y_range
        m = self.margin
        return self.height - m["bottom"] - (v - lo) / (hi - lo) * (self.height - m["top"] - m["bottom"])

    def _inside_y(self, y):
        v = math.log10(y) if self.log_y else y
        return self.y_range[0] <= v <= self.y_range[1]

    # --- drawing ------------------------------------------------------------------------------------
    @staticmethod
    def _marker(kind, x, y, color, r=3.5):
        if kind == "square":
            return f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r:.1f}" height="{2 * r:.1f}" fill="{color}"/>'
        if kind == "triangle":
            return (f'<polygon points="{x:.1f},{y - r * 1.2:.1f} {x - r * 1.1:.1f},{y + r * 0.8:.1f} '
                    f'{x + r * 1.1:.1f},{y + r * 0.8:.1f}" fill="{color}"/>')
        if kind == "diamond":
            return (f'<polygon points="{x:.1f},{y - r * 1.3:.1f} {x + r:.1f},{y:.1f} {x:.1f},{y + r * 1.3:.1f} '
                    f'{x - r:.1f},{y:.1f}" fill="{color}"/>')
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" fill="{color}"/>'

    def svg(self):
        self._layout()
        names = [s[1] for s in self.series if s[1] is not None]
        self.margin["right"] = 44 + int(6.8 * max((len(n) for n in names), default=0))  # room for the legend
        m, w, h = self.margin, self.width, self.height
        left, right, top, bottom = m["left"], w - m["right"], m["top"], h - m["bottom"]
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
               'font-family="sans-serif" font-size="12">',
               f'<rect width="{w}" height="{h}" fill="white"/>',
               f'<text x="{(left + right) / 2:.1f}" y="22" text-anchor="middle" font-size="15">'
               f'{escape(self.title)}</text>']
        for value, label in self.x_ticks or []:
            x = self._x(value)
            if left <= x <= right:
                out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="#ddd"/>')
                out.append(f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{escape(label)}</text>')
        for value, label in self.y_ticks or []:
            y = self._y(value)
            if top <= y <= bottom:
                out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#ddd"/>')
                out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(label)}</text>')
        out.append(f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" fill="none" '
                   'stroke="#444"/>')
        out.append(f'<text x="{(left + right) / 2:.1f}" y="{h - 14}" text-anchor="middle">'
                   f'{escape(self.x_label)}</text>')
        out.append(f'<text transform="translate(18,{(top + bottom) / 2:.1f}) rotate(-90)" text-anchor="middle">'
                   f'{escape(self.y_label)}</text>')
        out.append(f'<clipPath id="plot-area"><rect x="{left}" y="{top}" width="{right - left}" '
                   f'height="{bottom - top}"/></clipPath>')
        out.append('<g clip-path="url(#plot-area)">')
        for kind, _, xy, color, style in self.series:
            if kind == "line" and len(xy) >= 2:
                path = " ".join(f"{self._x(x):.1f},{self._y(y):.1f}" for x, y in sorted(xy))
                dash = f' stroke-dasharray="{style}"' if style else ""
                out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.5"{dash}/>')
            elif kind == "points":
                out += [self._marker(style, self._x(x), self._y(y), color) for x, y in xy if self._inside_y(y)]
        out.append("</g>")
        out += self._legend(right + 14, top)
        out.append("</svg>")
        return "\n".join(out) + "\n"

    def _legend(self, x, y):
        out = []
        named = [s for s in self.series if s[1] is not None]
        for i, (kind, name, _, color, style) in enumerate(named):
            row = y + 8 + 18 * i
            if kind == "line":
                dash = f' stroke-dasharray="{style}"' if style else ""
                out.append(f'<line x1="{x}" y1="{row}" x2="{x + 22}" y2="{row}" stroke="{color}" '
                           f'stroke-width="1.5"{dash}/>')
            else:
                out.append(self._marker(style, x + 11, row, color))
            out.append(f'<text x="{x + 30}" y="{row + 4}">{escape(name)}</text>')
        return out
