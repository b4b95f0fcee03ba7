"""Incidents: the windows where rate, latency, error share or requests in flight leave their
robust baseline, what kind each is (burst, slowdown, errors, saturation, backend down), how
much worse than the baseline, and the causes (the values of each dimension that explain the
change, ranked the Adtributor way).

Detection, per bucket of the timeline (logan.answer.timeline): each signal's robust z-score
against the median and the median absolute deviation of all buckets, a bucket
flagged when it is both far (z) and much (a ratio) above; flagged buckets close together
make one window. docs/postmortem.md says why this suits per-bucket request logs.

Causes (Bhagwan et al., "Adtributor", NSDI 2014): for each dimension (CAUSE_COLUMNS), each
value's share of the window's extra requests, errors or time against what the baseline
predicts (its explanatory power) and how surprising its share is (Jensen-Shannon); per
dimension the most surprising values that together explain most of the change, and the
dimensions ranked by that surprise. The per-value counts come from
queries/value_totals.sql and queries/incident_shares.sql, the few-valued columns read
together in one pass (cause_groups).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb
import numpy as np

from logan.answer.filters import filter_sql
from logan.answer.timeline import Story, story
from logan.answer.views import run_cursor, series_sql
from logan.errors import LoganError
from logan.store import ANSWER_MEMORY_MB, stored_columns, within_memory
from logan.units import format_us

if TYPE_CHECKING:
    import pandas as pd

# The dimensions causes are looked for in: one column each, a fixed whitelist (the only text
# that enters queries/incident_shares.sql).
CAUSE_COLUMNS = ("indirector", "route", "requester_group", "requester", "environment", "backend", "server",
                 "status", "source", "vhost", "method")  # fmt: skip
KINDS = ("backend down", "saturation", "burst", "errors", "slowdown")  # which names an incident first

Z_FAR = 5.0  # robust z-score a bucket must reach
Z_ALONE = 8.0  # ... to be an incident on its own (else two buckets in a row)
MERGE_GAP = 1  # flagged buckets at most this many buckets apart are one window
MIN_REQUESTS = 20  # a bucket's percentile or error share counts from this many requests
EP_ELEMENT = 0.1  # Adtributor: a value explains at least this share to be a cause
EP_DIMENSION = 0.67  # ... and a dimension's causes together at least this share
MAX_CAUSES = 3  # ... with at most this many values (a succinct explanation)
MIN_SURPRISE = 0.01  # ... whose shares moved: when every value grew alike, none is the cause


NORMAL_MAD = 1.482602218505602  # 1 / the normal's third quartile: MAD x this estimates sigma


@dataclass(frozen=True)
class Signal:
    """A per-bucket series the detector watches: flagged where its robust z-score is at
    least Z_FAR and its value at least `ratio` times the median (or, for a share, `ratio`
    above it)."""

    name: str
    kind: str
    ratio: float
    log: bool = False  # latencies: compared as logarithms (a 2x rise is a 2x rise at any level)
    share: bool = False  # a fraction: the ratio is a difference


SIGNALS = (
    Signal("rate", "burst", 1.5),
    Signal("p95_us", "slowdown", 2.0, log=True),
    Signal("error_share", "errors", 0.05, share=True),
    Signal("in_flight_max", "saturation", 1.5),
)


def incidents(
    con: duckdb.DuckDBPyConnection,
    bucket: str | int | None = None,
    **filters: object,
) -> pd.DataFrame:
    """One row per incident: start, end (UTC), width_us (of the buckets), kind, kinds,
    change (how much worse, in words), rate_ratio, p95_ratio, error_share,
    baseline_error_share, in_flight_max, saturation (in words), events (the server events
    in it), cause (the first, in words) and causes: a list of {dimension, value, explains,
    surprise, baseline_share, incident_share, measure}, most telling first. `filters` as
    logan.answer.timeline.timeline takes them."""
    return incidents_of(con, story(con, (), bucket, **filters), filters)


def incidents_of(con: duckdb.DuckDBPyConnection, told: Story, filters: dict | None = None) -> pd.DataFrame:
    """The incidents of a timeline already computed (see `incidents`)."""
    import pandas as pd

    frame = told.frame.reset_index(drop=True)
    flags, z = flagged(frame)
    if "in_flight_max" in flags:  # more in flight marks an incident only as a plateau at a limit
        flags["in_flight_max"] = _inside(frame, [(s.start, s.end) for s in told.saturation])
        z = z.drop(columns="in_flight_max")
    down = servers_down(con, frame, told, filters or {})
    windows = _windows(flags.any(axis=1).to_numpy() | down.any(axis=1).to_numpy(), z.max(axis=1).to_numpy())
    baseline = _baseline(len(frame), windows)
    measures = [_measure(_kinds_in(frame, told, flags, down, w)) for w in windows]
    causes = within_memory(  # the values' counts spill; the store's blocks read are let go
        con, ANSWER_MEMORY_MB, lambda: all_causes(con, frame, windows, baseline, measures, filters or {})
    )
    rows = [_describe(frame, told, flags, down, baseline, w, c) for w, c in zip(windows, causes, strict=True)]
    return pd.DataFrame(rows, columns=INCIDENT_COLUMNS)


INCIDENT_COLUMNS = ["start", "end", "width_us", "kind", "kinds", "change", "rate_ratio", "p95_ratio",
                    "error_share", "baseline_error_share", "in_flight_max", "saturation", "events", "cause",
                    "causes"]  # fmt: skip


def robust_z(x: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """(x - median) / (1.4826 MAD): a z-score that incidents filling up to half the buckets
    cannot move; `floor` is the smallest scale (a series that barely moves in the baseline
    should not make every small wobble an incident). NaN stays NaN.

    The MAD is scipy.stats.median_abs_deviation(scale="normal") (the tests hold the two
    equal), written with numpy: importing scipy.stats takes longer than the whole answer."""
    ok = ~np.isnan(x)
    if ok.sum() < 3:
        return np.full(len(x), np.nan)
    median = np.median(x[ok])
    mad = np.median(np.abs(x[ok] - median)) * NORMAL_MAD
    return (x - median) / max(mad, floor, 1e-12)


def flagged(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per bucket and signal: whether it is flagged, and its z-score."""
    import pandas as pd

    flags, zs = {}, {}
    enough = frame["requests"].to_numpy() >= MIN_REQUESTS
    for s in SIGNALS:
        if s.name not in frame.columns:
            continue
        x = frame[s.name].to_numpy(dtype="float64", na_value=np.nan)
        if s.name in ("p95_us", "error_share"):
            x = np.where(enough, x, np.nan)
        base = np.nanmedian(x) if np.isfinite(x).any() else np.nan
        if s.log:
            x, floor = np.log(np.maximum(x, 1.0)), np.log(1.25)
        elif s.share:  # binomial noise of a share over a typical bucket
            n = max(np.median(frame["requests"]), 1)
            floor = np.sqrt(max(base, 1.0 / n) * (1 - max(base, 1.0 / n)) / n)
        elif s.name == "rate":  # at least the Poisson noise of a typical bucket's count
            floor = base / np.sqrt(max(np.median(frame["requests"]), 1))
        else:
            floor = np.sqrt(max(base, 1.0))
        z = robust_z(x, floor)
        value = np.exp(x) if s.log else x
        much = value - base >= s.ratio if s.share else value >= s.ratio * base
        flags[s.name] = np.nan_to_num(z) >= Z_FAR
        flags[s.name] &= np.asarray(much, dtype=bool)
        zs[s.name] = np.nan_to_num(z)
    return pd.DataFrame(flags), pd.DataFrame(zs)


def servers_down(
    con: duckdb.DuckDBPyConnection, frame: pd.DataFrame, told: Story, filters: dict
) -> pd.DataFrame:
    """Per bucket and server: down when the server's requests stop (none in a bucket where
    its median is at least 5 and traffic goes on) or between its server_down and server_up
    events."""
    import pandas as pd

    down = pd.DataFrame(index=frame.index)
    if "server" not in stored_columns(con):
        return down
    width = int(frame["width_us"].iloc[0])
    parts = pd.DataFrame({"bucket_us": frame["bucket_us"], "part": frame["bucket_us"].astype(str)})
    per = value_counts(con, ["server"], parts, width, filters)["server"]
    if per.empty or per["value"].nunique() < 2:
        return down
    counts = per.pivot_table(index="part", columns="value", values="requests", aggfunc="sum", fill_value=0)
    counts = counts.reindex(parts["part"], fill_value=0)
    going_on = frame["requests"].to_numpy() >= 0.5 * np.median(frame["requests"])
    for server in (c for c in counts.columns if not str(c).startswith("<")):  # <NOSRV>: no server chosen
        n = counts[server].to_numpy()
        if np.median(n) >= 5:
            down[server] = (n == 0) & going_on
    for e in told.events.itertuples():
        if e.kind == "server_down" and e.server:
            up = told.events[(told.events["kind"] == "server_up") & (told.events["server"] == e.server)
                             & (told.events["ts"] > e.ts)]  # fmt: skip
            until = up["ts"].min() if len(up) else frame["start"].max().tz_localize(None) + _td(width)
            starts = frame["start"].dt.tz_localize(None)
            name = str(e.server).split("/")[-1]
            inside = ((starts + _td(width)) > e.ts) & (starts < until)
            down[name] = down.get(name, False) | inside.to_numpy()
    return down


def value_counts(con: duckdb.DuckDBPyConnection, columns: Sequence[str], parts: pd.DataFrame, width: int,
                 filters: dict) -> dict[str, pd.DataFrame]:  # fmt: skip
    """queries/incident_shares.sql for columns read together (see cause_groups): per column,
    per value and part (of `parts`: bucket_us -> part), requests, errors, time_us, timed."""
    import pandas as pd

    where, params = filter_sql(filters)
    span = [pd.to_datetime(parts["bucket_us"].min(), unit="us"),
            pd.to_datetime(parts["bucket_us"].max() + width, unit="us")]  # fmt: skip
    con.register("incident_buckets", parts)
    try:
        got = run_cursor(
            con, series_sql("incident_shares", [_cause(c) for c in columns]), where, [*params, width, *span]
        ).df()
    finally:
        con.unregister("incident_buckets")
    return _per_column(got, columns, ["part"])


def value_totals(
    con: duckdb.DuckDBPyConnection, columns: Sequence[str], filters: dict
) -> dict[str, pd.DataFrame]:
    """queries/value_totals.sql for columns read together (see cause_groups): per column and
    value, requests, errors, time_us, timed."""
    where, params = filter_sql(filters)
    got = run_cursor(con, series_sql("value_totals", [_cause(c) for c in columns]), where, params).df()
    return _per_column(got, columns)


MEASURES = ["requests", "errors", "time_us", "timed"]


def _per_column(
    got: pd.DataFrame, columns: Sequence[str], keys: Sequence[str] = ()
) -> dict[str, pd.DataFrame]:
    """The amounts per combination of the columns' values summed per column: {column: rows
    of value, *keys, MEASURES}. A sum over no duration stays empty (NULL), as SQL's."""
    if len(columns) == 1:
        return {columns[0]: got.rename(columns={columns[0]: "value"})}
    return {
        c: got.groupby([c, *keys], dropna=False, sort=False)[MEASURES]
        .sum(min_count=1)
        .reset_index()
        .rename(columns={c: "value"})
        for c in columns
    }


# Read in a query of their own: a column of many values (a requester per client, a route per
# URL template) would make the combinations as many as the requests, and `source` is read
# through the join with the ingests. The other cause columns are read in one GROUP BY (their
# combinations are few) and summed per column in pandas: one pass over the requests, not one
# per column.
ON_THEIR_OWN = ("requester", "route", "source")


def cause_groups(columns: Sequence[str]) -> list[list[str]]:
    """The cause columns as the queries read them: the few-valued ones together, the others
    one by one."""
    together = [c for c in columns if c not in ON_THEIR_OWN]
    return ([together] if together else []) + [[c] for c in columns if c in ON_THEIR_OWN]


def _cause(column: str) -> str:
    if column not in CAUSE_COLUMNS:
        raise LoganError(f"not a cause column: {column!r}")
    return column


def _td(us: int) -> object:
    import pandas as pd

    return pd.Timedelta(microseconds=int(us))


def _windows(flag: np.ndarray, zmax: np.ndarray) -> list[tuple[int, int]]:
    """Runs of flagged buckets, merged across gaps of at most MERGE_GAP buckets; a run of
    one bucket is kept only when it is far out (Z_ALONE)."""
    idx = np.flatnonzero(flag)
    runs: list[list[int]] = []
    for i in idx:
        if runs and i - runs[-1][1] <= MERGE_GAP + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return [(a, b) for a, b in runs if b > a or zmax[a] >= Z_ALONE]


def _baseline(n: int, windows: list[tuple[int, int]]) -> np.ndarray:
    """The buckets the causes are measured against: outside every window and the bucket on
    each side of it (where an incident begins or ends within the bucket)."""
    keep = np.ones(n, dtype=bool)
    for a, b in windows:
        keep[max(a - 1, 0) : b + 2] = False
    return keep


def _describe(frame: pd.DataFrame, told: Story, flags: pd.DataFrame, down: pd.DataFrame,
              baseline: np.ndarray, window: tuple[int, int], causes: list[dict]) -> dict:  # fmt: skip
    """One incident's row (see `incidents`)."""
    first, last = window
    width = int(frame["width_us"].iloc[0])
    start, end = frame["start"].iloc[first], frame["start"].iloc[last] + _td(width)
    kinds = _kinds_in(frame, told, flags, down, window)
    inside, base = frame.iloc[first : last + 1], frame[baseline]
    rate_ratio = _ratio(inside, base, "rate")
    p95_ratio = _ratio(inside, base, "p95_us")
    err = inside["status_5xx"].sum() / max(inside["requests"].sum(), 1)
    base_err = base["status_5xx"].sum() / base["requests"].sum() if base["requests"].sum() else None
    sat = [s for s in told.saturation if s.start < end and s.end > start]
    gone = [str(c) for c in down.columns if down[c].iloc[first : last + 1].any()]
    change = {  # without a baseline (a server down all day), what the window itself shows
        "burst": f"rate {rate_ratio:.1f}x the baseline"
        if rate_ratio is not None
        else f"rate up to {inside['rate'].max():.1f}/s ({NO_BASELINE})",
        "slowdown": f"p95 {p95_ratio:.1f}x the baseline"
        if p95_ratio is not None
        else f"p95 up to {format_us(inside['p95_us'].max())} ({NO_BASELINE})",
        "errors": f"5xx {100 * err:.1f}% of requests ("
        + (f"baseline {100 * base_err:.1f}%)" if base_err is not None else f"{NO_BASELINE})"),
        "saturation": str(sat[0]) if sat else "",
        "backend down": f"{', '.join(gone)} stopped answering",
    }
    kind = next(k for k in KINDS if k in kinds)
    events = told.events
    if len(events):
        events = events[
            (events["ts"] >= (start - _td(width)).tz_localize(None)) & (events["ts"] < end.tz_localize(None))
        ]
    top = causes[0] if causes else None
    return {
        "start": start, "end": end, "width_us": width, "kind": kind,
        "kinds": [k for k in KINDS if k in kinds],
        "change": "; ".join(change[k] for k in KINDS if k in kinds),
        "rate_ratio": rate_ratio, "p95_ratio": p95_ratio, "error_share": err,
        "baseline_error_share": base_err,
        "in_flight_max": inside["in_flight_max"].max() if "in_flight_max" in inside else None,
        "saturation": "; ".join(str(s) for s in sat) or None,
        "events": [f"{e.ts:%Y-%m-%d %H:%M:%S} {e.text}" for e in events.itertuples()] if len(events) else [],
        "cause": _said(top) if top else _no_cause(baseline),
        "causes": causes,
    }  # fmt: skip


def _kinds_in(frame: pd.DataFrame, told: Story, flags: pd.DataFrame, down: pd.DataFrame,
              window: tuple[int, int]) -> set[str]:  # fmt: skip
    """The kinds of incident a window shows (KINDS)."""
    first, last = window
    start, end = frame["start"].iloc[first], frame["start"].iloc[last] + _td(int(frame["width_us"].iloc[0]))
    flags, down = flags.iloc[first : last + 1], down.iloc[first : last + 1]
    by_signal = {s.name: s.kind for s in SIGNALS}
    kinds = {by_signal[c] for c in flags.columns if flags[c].any()}
    plateau = any(s.start < end and s.end > start for s in told.saturation)
    kinds.discard("saturation")  # more in flight alone is a burst or a slowdown, not a limit
    if plateau:
        kinds.add("saturation")
    if len(down.columns) and down.to_numpy().any():
        kinds.add("backend down")
    return kinds or {"slowdown"}


def _ratio(inside: pd.DataFrame, base: pd.DataFrame, col: str) -> float | None:
    """The window's highest over the baseline's median; None without a baseline (every
    bucket is in an incident or beside one: a server down all day)."""
    if col not in inside or base[col].isna().all():
        return None
    return float(inside[col].max() / max(base[col].median(), 1e-9))


# What an incident's cause says when no bucket lies outside the incidents to compare with.
NO_BASELINE = "no time outside the incident to compare with"


def _no_cause(baseline: np.ndarray) -> str:
    return "every value alike: no dimension stands out" if baseline.any() else NO_BASELINE


def _said(c: dict) -> str:
    return (f"{c['dimension']}={c['value']} explains {100 * c['explains']:.0f}% "
            f"({100 * c['baseline_share']:.0f}% -> {100 * c['incident_share']:.0f}%)")  # fmt: skip


def _measure(kinds: set[str]) -> str:
    """What an incident's causes explain: the requests missing where a server stopped, the
    extra errors, the extra requests of a burst (a saturation's too, when it came with one),
    else the extra time."""
    for kind, measure in (("backend down", "missing"), ("errors", "errors"), ("burst", "requests")):
        if kind in kinds:
            return measure
    return "time"


def _inside(frame: pd.DataFrame, spans: list[tuple[object, object]]) -> np.ndarray:
    """Which buckets overlap any of the (start, end) spans."""
    starts = frame["start"]
    ends = starts + _td(int(frame["width_us"].iloc[0]))
    hit = np.zeros(len(frame), dtype=bool)
    for a, b in spans:
        hit |= ((starts < b) & (ends > a)).to_numpy()
    return hit


def all_causes(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame, windows: list[tuple[int, int]],
               baseline: np.ndarray, measures: list[str], filters: dict) -> list[list[dict]]:  # fmt: skip
    """For each window, its causes (see `explain`), from two queries (the totals, the
    windows) for all windows and the few-valued dimensions at once, and two for each
    many-valued one (cause_groups)."""
    import pandas as pd

    if not windows:
        return []
    if not baseline.any():  # no share to measure a change against
        return [[] for _ in windows]
    width = int(frame["width_us"].iloc[0])
    labels = np.full(len(frame), "guard", dtype=object)  # the bucket each side of a window
    labels[baseline] = None
    for i, (a, b) in enumerate(windows):
        labels[a : b + 1] = str(i)
    parts = pd.DataFrame({"bucket_us": frame["bucket_us"], "part": labels}).dropna()
    seconds = parts["part"].value_counts() * width / 1e6
    seconds["baseline"] = baseline.sum() * width / 1e6
    found: list[list[tuple[float, str, list[dict]]]] = [[] for _ in windows]
    have = stored_columns(con) | {"source"}
    totals: dict[str, pd.DataFrame] = {}
    for group in cause_groups([c for c in CAUSE_COLUMNS if c in have]):
        totals.update({c: _named(got) for c, got in value_totals(con, group, filters).items()})
    # one value (or none) everywhere: no share can move
    moving = [c for c in CAUSE_COLUMNS if c in totals and totals[c]["value"].nunique() >= 2]
    counts: dict[str, pd.DataFrame] = {}
    for group in cause_groups(moving):
        counts.update(value_counts(con, group, parts, width, filters))
    for column in moving:
        table = _named(counts[column]).pivot_table(index="value", columns="part", aggfunc="sum", fill_value=0)
        table = _with_baseline(table, totals[column].groupby("value").sum())
        for i in range(len(windows)):
            if str(i) not in table["requests"].columns or "baseline" not in table["requests"].columns:
                continue
            chosen = explain(table, str(i), measures[i], seconds[str(i)] / seconds["baseline"], column)
            if chosen:
                found[i].append((sum(c["surprise"] for c in chosen), column, chosen))
    return [[c for _, _, cs in sorted(f, key=lambda t: -t[0]) for c in cs] for f in found]


NO_VALUE = "(none)"


def _named(counts: pd.DataFrame) -> pd.DataFrame:
    """Values as text, NULL as NO_VALUE (a value of its own: requests no rule classified)."""
    counts["value"] = counts["value"].astype(object).where(counts["value"].notna(), NO_VALUE).astype(str)
    return counts


def _with_baseline(table: pd.DataFrame, totals: pd.DataFrame) -> pd.DataFrame:
    """The per-part table with a 'baseline' part: each value's totals less its amounts in
    the windows and the buckets beside them."""
    import pandas as pd

    table = table.reindex(totals.index, fill_value=0)
    measures = ["requests", "errors", "time_us", "timed"]
    base = {(m, "baseline"): totals[m].astype(float) - table[m].sum(axis=1) for m in measures}
    return pd.concat([table, pd.DataFrame(base)], axis=1)


def explain(table: pd.DataFrame, part: str, measure: str, time_ratio: float, dimension: str) -> list[dict]:
    """Adtributor for one dimension: each value's actual (A) and expected (F) amount in the
    window, its explanatory power (A - F over the total A - F) and surprise (the
    Jensen-Shannon term of its expected and actual shares); the most surprising values that
    each explain at least EP_ELEMENT, until together they explain EP_DIMENSION, if at most
    MAX_CAUSES do."""
    base_n, win_n = table["requests"]["baseline"].to_numpy(float), table["requests"][part].to_numpy(float)
    if measure in ("requests", "missing"):
        actual = win_n
        expected = base_n * time_ratio if measure == "requests" else base_n / base_n.sum() * win_n.sum()
    elif measure == "errors":
        base_e = table["errors"]["baseline"].to_numpy(float)
        rate = np.where(base_n > 0, base_e / np.maximum(base_n, 1), base_e.sum() / max(base_n.sum(), 1))
        actual, expected = table["errors"][part].to_numpy(float), win_n * rate
    else:  # time: the window's requests at each value's baseline mean
        base_t, base_k = (
            table["time_us"]["baseline"].to_numpy(float),
            table["timed"]["baseline"].to_numpy(float),
        )
        mean = np.where(base_k > 0, base_t / np.maximum(base_k, 1), base_t.sum() / max(base_k.sum(), 1))
        actual, expected = table["time_us"][part].to_numpy(float), table["timed"][part].to_numpy(float) * mean
    extra = expected - actual if measure == "missing" else actual - expected
    # what went missing is explained by the values that lost requests, not offset by those
    # that took them over
    total = extra[extra > 0].sum() if measure == "missing" else extra.sum()
    if total <= 0 or actual.sum() <= 0 or expected.sum() <= 0:
        return []
    ep = extra / total
    p, q = expected / expected.sum(), actual / actual.sum()
    surprise = surprises(p, q)
    chosen, total = [], 0.0
    for i in np.argsort(-surprise, kind="stable"):
        if ep[i] < EP_ELEMENT:
            continue
        chosen.append(i)
        total += ep[i]
        if total >= EP_DIMENSION:
            break
    if total < EP_DIMENSION or len(chosen) > MAX_CAUSES or surprise[chosen].sum() < MIN_SURPRISE:
        return []
    return [{"dimension": dimension, "value": table.index[i], "explains": float(ep[i]),
             "surprise": float(surprise[i]), "baseline_share": float(p[i]), "incident_share": float(q[i]),
             "measure": measure} for i in chosen]  # fmt: skip


def surprises(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Each value's term of the Jensen-Shannon divergence of the expected shares p and the
    actual shares q (natural log; they sum to scipy's jensenshannon(p, q) squared)."""
    return 0.5 * (_plogp(p, p + q) + _plogp(q, p + q))


def _plogp(p: np.ndarray, pq: np.ndarray) -> np.ndarray:
    # p log(2p / (p + q)), 0 where p is 0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, p * np.log(2 * p / np.where(pq > 0, pq, 1)), 0.0)
