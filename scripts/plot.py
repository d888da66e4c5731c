#!/usr/bin/env python3
"""Plots of xreduce's measurements, drawn from the JSON its tools write.

    plot.py INPUT.json -o OUTPUT.png [--kind ladder|sweep|host] [--datasheet GBPS] [--title TEXT]

Kinds of JSON, detected from the content unless --kind names one:
  ladder  `reduce_cli --kernel all --json`: a list of rows, one per rung. Bars of GB/s per rung,
          each rung annotated with its step speed-up over the rung before; the baseline row
          (`cub`) and the probe row (`stream_read`, the measured read ceiling) as horizontal
          lines, and --datasheet as a third. One panel per backend.
  sweep   `xr_bench_auto_vs_cub --json FILE`: time and GB/s of auto and CUB, and auto's time
          over CUB's, against n (log axes), one colour per element type, with the datasheet
          bandwidth and the launch floor.
  host    `xr_bench_host_path --json FILE`: each host path's GB/s beside the limits it is
          measured against (link, fill, file read), with its share of its limit.

A new kind of JSON (segmented shapes, for one) is one function `plot_<kind>(data, axes_factory,
args)` added to PLOTTERS, and an object written with {"kind": "<kind>", ...}, which detect_kind
recognises by that key.

The output format follows the file's extension (png, svg, pdf: any that matplotlib writes).
Exit codes: 0 written, 2 bad input or usage, 3 matplotlib missing; errors are one line on stderr.
"""
import argparse
import json
import math
import sys

PROG = "plot.py"


class PlotError(Exception):
    """A problem with the input or the arguments: reported in one line, exit 2."""


def fail(message, code):
    print(f"{PROG}: error: {message}", file=sys.stderr)
    sys.exit(code)


def load_pyplot():
    try:
        import matplotlib
    except ImportError:
        fail("matplotlib is not installed (Debian: apt-get install python3-matplotlib)", 3)
    matplotlib.use("Agg")  # headless: no display is needed or used
    import matplotlib.pyplot as plt
    return plt


def detect_kind(data):
    if isinstance(data, list) and data and all(isinstance(r, dict) and "kernel" in r and "bytes_per_s" in r
                                              for r in data):
        return "ladder"
    if isinstance(data, dict) and isinstance(data.get("kind"), str):
        return data["kind"]
    raise PlotError("cannot tell what this JSON holds: expected reduce_cli --kernel all --json output (a list of "
                    "rows) or an object with a \"kind\" key; pass --kind")


def gbps(row):
    return row["bytes_per_s"] / 1e9


def rate_text(value):
    """GB/s with the digits that matter: 8.4, 3050."""
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def row_role(row):
    """'probe' (a machine limit), 'baseline' (not ours: cub), 'auto', or 'rung'."""
    if row.get("probe"):
        return "probe"
    if row["kernel"] == "cub":
        return "baseline"
    if row["kernel"].startswith("auto"):
        return "auto"
    return "rung"


def legend_with_colours(ax, colours, **kwargs):
    """The axes' legend: its labelled lines, then a swatch per bar colour saying what it means."""
    from matplotlib.patches import Patch  # matplotlib is loaded by now (load_pyplot)
    handles, _ = ax.get_legend_handles_labels()
    ax.legend(handles=handles + [Patch(color=c, label=text) for c, text in colours.items()], **kwargs)


def ladder_labels(rows):
    """Per bar, the label above it: its GB/s, then the step speed-up over the rung before (time
    ratio), or for auto the speed-up over the first rung (cumulative)."""
    labels, first, previous = [], None, None
    for row in rows:
        ms = row["kernel_ms"]
        if row_role(row) == "rung":
            speedup = f"{previous / ms:.2f}x" if previous else "first"
            first = first or ms
            previous = ms
        else:
            speedup = f"{first / ms:.1f}x all" if first else ""
        labels.append(f"{rate_text(gbps(row))}\n{speedup}")
    return labels


def describe_input(rows):
    r = rows[0]
    n = r["n"]
    size = f"2^{int(math.log2(n))}" if n > 0 and n & (n - 1) == 0 else f"{n:,}"
    return f"{r['op']} of {size} {r['type']}"


def plot_ladder(data, axes_factory, args):
    backends = list(dict.fromkeys(r["backend"] for r in data))
    fig, axes = axes_factory(len(backends), 1, figsize=(max(7.0, 0.75 * max(len(data), 8)), 5.5 * len(backends)))
    for ax, backend in zip(axes, backends):
        rows = [r for r in data if r["backend"] == backend]
        bars = [r for r in rows if row_role(r) in ("rung", "auto")]
        lines = [r for r in rows if row_role(r) in ("baseline", "probe")]
        colours = ["tab:orange" if row_role(r) == "auto" else "tab:blue" for r in bars]
        positions = range(len(bars))
        drawn = ax.bar(positions, [gbps(r) for r in bars], color=colours)
        for text in ax.bar_label(drawn, labels=ladder_labels(bars), padding=2, fontsize=8):
            text.set_bbox({"facecolor": "white", "edgecolor": "none", "pad": 1})
            text.set_zorder(5)
        ax.set_xticks(list(positions), [r["kernel"] for r in bars], rotation=35, ha="right", fontsize=9)
        styles = iter([("tab:red", "--"), ("tab:green", ":"), ("tab:purple", "-.")])
        for r in lines:
            what = "measured read ceiling" if row_role(r) == "probe" else "baseline"
            colour, style = next(styles)
            ax.axhline(gbps(r), color=colour, linestyle=style, label=f"{r['kernel']} ({what}): {rate_text(gbps(r))} GB/s")
        if args.datasheet:
            colour, style = next(styles)
            ax.axhline(args.datasheet, color=colour, linestyle=style, label=f"datasheet: {args.datasheet:.0f} GB/s")
        top = max([gbps(r) for r in rows] + [args.datasheet or 0])
        ax.set_ylim(0, top * 1.3)
        ax.set_ylabel("GB/s (input bytes / kernel time)")
        ax.set_title(args.title or f"{backend} ladder: {describe_input(rows)}, median of {rows[0]['repeats']}\n"
                     f"{rows[0]['device']}", fontsize=10)
        legend_with_colours(ax, {"tab:blue": "rung (above: GB/s, step speed-up)",
                                 "tab:orange": "auto (above: GB/s, speed-up over the first rung)"},
                            loc="upper left", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    return fig


def plot_sweep(data, axes_factory, args):
    rows = data["rows"]
    fig, (time_ax, rate_ax, ratio_ax) = axes_factory(3, 1, figsize=(8, 10.5), sharex=True,
                                                     gridspec_kw={"height_ratios": [3, 3, 1.4]})
    types = list(dict.fromkeys(r["type"] for r in rows))
    colours = dict(zip(types, ["tab:blue", "tab:orange", "tab:green", "tab:red"]))
    for t in types:
        mine = [r for r in rows if r["type"] == t]
        n = [r["n"] for r in mine]
        for side, style in (("auto", "-"), ("cub", "--")):
            label = f"{t} {side}"
            time_ax.plot(n, [r[f"{side}_us"] for r in mine], style, marker=".", color=colours[t], label=label)
            rate_ax.plot(n, [r[f"{side}_gbps"] for r in mine], style, marker=".", color=colours[t], label=label)
        ratio_ax.plot(n, [r["ratio"] for r in mine], marker=".", color=colours[t], label=t)
    sheet = args.datasheet or data.get("datasheet_gbps")
    if sheet:
        rate_ax.axhline(sheet, color="black", linestyle=":", label=f"datasheet: {sheet:.0f} GB/s")
    if data.get("launch_floor_us"):
        time_ax.axhline(data["launch_floor_us"], color="grey", linestyle=":",
                        label=f"launch floor (empty kernel): {data['launch_floor_us']:.1f} us")
    ratio_ax.axhline(1.0, color="black", linewidth=0.8)
    for ax in (time_ax, rate_ax, ratio_ax):
        ax.set_xscale("log", base=2)
        ax.grid(which="both", alpha=0.3)
        ax.legend(fontsize=8, ncol=2)
    time_ax.set_yscale("log")
    rate_ax.set_yscale("log")
    time_ax.set_ylabel("time per call (us, median)")
    rate_ax.set_ylabel("GB/s (input bytes / time)")
    ratio_ax.set_ylabel("auto / CUB time")
    ratio_ax.set_xlabel("n (elements)")
    time_ax.set_title(args.title or f"auto against CUB on {data['device']}: {data.get('op', 'sum')}, "
                      "solid auto, dashed CUB", fontsize=10)
    return fig


def plot_host(data, axes_factory, args):
    rows = data["rows"]
    fig, (ax,) = axes_factory(1, 1, figsize=(9, 0.5 * len(rows) + 2))
    positions = range(len(rows))
    colours = ["tab:grey" if not r["limit"] else "tab:blue" for r in rows]
    drawn = ax.barh(positions, [r["gbps"] for r in rows], color=colours)
    labels = [f"{r['gbps']:.1f} GB/s" + (f", {100 * r['ratio']:.0f}% of {r['ratio_of']}" if r["limit"] else "") +
              (f", {100 * r['fill_ratio']:.0f}% of fill" if "fill_ratio" in r else "") for r in rows]
    ax.bar_label(drawn, labels=labels, padding=3, fontsize=8)
    ax.set_yticks(list(positions), [r["what"] for r in rows], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlim(0, max(r["gbps"] for r in rows) * 1.6)
    ax.set_xlabel("GB/s (median over rounds)")
    legend_with_colours(ax, {"tab:grey": "limit of this host",
                             "tab:blue": "xreduce path, end to end (ratio: median over rounds of rate / limit)"},
                        loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(args.title or f"host path on {data['device']}: sum of 2^{data['log2n']} f32", fontsize=10)
    return fig


PLOTTERS = {"ladder": plot_ladder, "sweep": plot_sweep, "host": plot_host}


def main(argv):
    parser = argparse.ArgumentParser(prog=PROG, description="Plot xreduce's JSON measurements.")
    parser.add_argument("input", help="JSON from reduce_cli --json or a benchmark's --json FILE ('-': stdin)")
    parser.add_argument("-o", "--output", required=True, help="image to write; its extension picks the format")
    parser.add_argument("--kind", choices=sorted(PLOTTERS), help="what the JSON holds (default: detected)")
    parser.add_argument("--datasheet", type=float, help="a bandwidth line (GB/s), e.g. the GPU's datasheet figure")
    parser.add_argument("--title", help="replaces the title drawn from the data")
    parser.error = lambda message: fail(f"{message} (see --help)", 2)  # one line, like every error here
    args = parser.parse_args(argv)
    try:
        with (sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise PlotError(f"cannot read {args.input}: {e}") from None
    kind = args.kind or detect_kind(data)
    if kind not in PLOTTERS:
        raise PlotError(f"no plot for JSON of kind '{kind}' (known: {', '.join(sorted(PLOTTERS))})")
    plt = load_pyplot()

    def axes_factory(rows, cols, **kwargs):
        fig, axes = plt.subplots(rows, cols, squeeze=False, **kwargs)
        return fig, list(axes.flat)

    try:
        fig = PLOTTERS[kind](data, axes_factory, args)
    except (KeyError, TypeError, IndexError, ValueError, ZeroDivisionError) as e:
        raise PlotError(f"{args.input} is not {kind} JSON as expected ({type(e).__name__}: {e})") from None
    fig.tight_layout()
    try:
        fig.savefig(args.output, dpi=120, bbox_inches="tight")
    except (OSError, ValueError) as e:
        raise PlotError(f"cannot write {args.output}: {e}") from None
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except PlotError as e:
        fail(str(e), 2)
