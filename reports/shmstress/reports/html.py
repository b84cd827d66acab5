"""The report's ``index.html``.

Self-contained (inline CSS, no scripts, no external assets) so it can be attached to a CI
run, opened from a file share or mailed around and still render the same. A results file
is data of unknown origin, so the page holds nothing it did not build itself:

- every piece of campaign data is text through ``html.escape`` (the standard library's,
  kept with Python): log snippets and messages are arbitrary text and routinely contain
  ``<``, ``&`` and quotes. The page is a few dozen fixed fragments around escaped values,
  not a template language's job: jinja2's autoescape would call the same escaping;
- a link or an image names only a copy the report made below its own directory
  (``_href``: relative, each segment percent-encoded, so no scheme such as
  ``javascript:`` and no ``..`` can come out of a recorded path);
- a swimlane is an ``<img>`` of the copied SVG, never its text (see ``swimlanes``);
- a command is shown shell-quoted (``shlex``): what the reader copies runs ``shmstress``
  with the words shown, whatever a path holds, and nothing else.
"""

from __future__ import annotations

import html
import os
import shlex
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path, PurePosixPath

from shmstress.reports.aggregate import (
    CampaignProvenance,
    FailureGroup,
    NewFailures,
    campaign_order,
)
from shmstress.reports.bundles import Published
from shmstress.reports.files import write_text
from shmstress.reports.results import ConfigStats, Trial

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1200px; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { margin-bottom: 0.2em; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 2em; }
.meta { color: #555; }
.warning { background: #fff4d6; border: 1px solid #e8c65a; padding: 0.5em 1em; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9em; }
table { border-collapse: collapse; font-size: 0.9em; width: 100%; }
th, td { border: 1px solid #ddd; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.config { white-space: nowrap; }
.scroll { overflow-x: auto; }
nav a { margin-right: 1em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.failing td:first-child { border-left: 4px solid #c0392b; }
section.failure { border: 1px solid #ddd; border-left: 4px solid #c0392b; padding: 0.5em 1em;
                  margin: 1em 0; }
pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; white-space: pre-wrap; }
code { background: #f3f3f3; padding: 0.1em 0.3em; }
.swimlane { overflow-x: auto; margin: 0.5em 0; }
.swimlane img { display: block; max-width: none; }
.new { background: #c0392b; color: #fff; border-radius: 3px; padding: 0 0.4em;
       font-size: 0.8em; vertical-align: middle; }
"""

_DASH = "\u2014"


@dataclass(frozen=True)
class PlotImage:
    """A chart to embed: where it is, and what it shows for readers who cannot see it."""

    path: Path
    alt: str
    caption: str


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _href(relative: str) -> str:
    """A link to ``relative``, a path below the page's directory, for an ``href``/``src``:
    each segment percent-encoded (a ``:`` too, so a first segment never reads as a scheme).
    Anything else is a bug here, never something a record may ask for."""
    path = PurePosixPath(relative)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise ValueError(f"not a path below the report directory: {relative!r}")
    return _e("/".join(urllib.parse.quote(part, safe="") for part in path.parts))


def _command(*words: str) -> str:
    """A command line the page builds, shell-quoted."""
    return shlex.join(words)


def _recorded_command(text: str | None) -> str | None:
    """A command a record carries, as the page may show it: a ``shmstress`` command,
    re-quoted word by word, so no ``;``, ``|``, ``$(...)`` or redirection in it acts;
    None for anything else (no command, or not one of ours)."""
    try:
        words = shlex.split(text or "")
    except ValueError:  # an unclosed quote
        return None
    return shlex.join(words) if words[:1] == ["shmstress"] else None


def counted(n: int, noun: str) -> str:
    """``1 trial``, ``2 trials``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _seconds(value: float | None) -> str:
    # Fixed millisecond resolution so a column of times lines up and compares at a glance.
    return _DASH if value is None else f"{value:.3f} s"


def _rate(stat: ConfigStats) -> str:
    if stat.trials == 0:
        return _DASH
    return f"{stat.rate:.3f} [{stat.wilson_low:.3f}, {stat.wilson_high:.3f}]"


def _pre_or_note(text: str | None, missing: str) -> str:
    if text is None or not text.strip():
        return f'<p class="meta">{_e(missing)}</p>'
    return f"<pre>{_e(text.rstrip())}</pre>"


def _summary(trials: Sequence[Trial], sources: Sequence[Path]) -> list[str]:
    violations = sum(1 for t in trials if t.outcome == "violation")
    clean = sum(1 for t in trials if t.outcome == "clean")
    errors = sum(1 for t in trials if t.outcome == "error")
    campaigns = campaign_order(trials)
    out = [
        f'<p class="meta">{counted(len(trials), "trial")} ({counted(violations, "violation")}, '
        f"{clean} clean, {counted(errors, 'error')}) from {counted(len(campaigns), 'campaign')}. "
        "Rates in the table and the first chart pool "
        "all campaigns listed; errored trials are excluded from rates.</p>"
    ]
    if sources:
        items = "".join(f"<li><code>{_e(p)}</code></li>" for p in sources)
        out.append(
            f'<details><summary class="meta">Result files</summary><ul>{items}</ul></details>'
        )
    return out


_COMMIT_SHOWN = 12
"""Characters of a commit shown; the full one is in the cell's title."""


def _values(values: Sequence[str], unknown: str = "not recorded") -> str:
    if not values:
        return f'<span class="meta">{_e(unknown)}</span>'
    return ", ".join(f"<code>{_e(v)}</code>" for v in values)


def _commits(commits: Sequence[str]) -> str:
    if not commits:
        return '<span class="meta">not recorded (not run in a git checkout)</span>'
    return ", ".join(f'<code title="{_e(c)}">{_e(c[:_COMMIT_SHOWN])}</code>' for c in commits)


def _provenance_table(campaigns: Sequence[CampaignProvenance]) -> list[str]:
    """What each campaign ran: a trend point means something only with the code it tested."""
    if not campaigns:
        return []
    out = [
        f'<h2 id="campaigns">Campaigns ({len(campaigns)})</h2>',
        '<p class="meta">What each campaign ran, as its results records say: the commit '
        "of the code under test, the shmstress and Python versions and the hosts.</p>",
        '<div class="scroll"><table>',
        "<thead><tr><th>campaign</th><th>started (UTC)</th><th>trials</th><th>failures</th>"
        "<th>code under test (commit)</th><th>shmstress</th><th>Python</th><th>hosts</th>"
        "</tr></thead>",
        "<tbody>",
    ]
    for c in campaigns:
        started = (c.started.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if c.started
                   else _DASH)
        out.append(
            f'<tr><td class="config">{_e(c.campaign)}</td><td class="num">{_e(started)}</td>'
            f'<td class="num">{c.trials}</td><td class="num">{c.failures}</td>'
            f"<td>{_commits(c.code_commits)}</td><td>{_values(c.shmstress_versions)}</td>"
            f"<td>{_values(c.python_versions)}</td><td>{_values(c.hosts)}</td></tr>"
        )
    out += ["</tbody>", "</table></div>"]
    return out


def _new_note(new: NewFailures | None, failures: Sequence[FailureGroup]) -> list[str]:
    if new is None or new.latest is None:
        return []
    if new.previous is None:
        return ['<p class="meta">One campaign only: no previous campaign to tell new '
                "failures from known ones.</p>"]
    count = sum(1 for g in failures if new.is_new(g))
    return [f'<p class="meta">{_e(counted(count, "distinct failure"))} of the latest campaign '
            f"({_e(new.latest)}) {'is' if count == 1 else 'are'} new since the previous one "
            f'({_e(new.previous)}), marked <span class="new">new</span>.</p>']


def _coverage(stat: ConfigStats) -> str:
    """``12 [9-15]``: the median and range of the trials' interleaving coverage."""
    values = stat.coverages
    if not values:
        return "-"
    return f"{stat.median_coverage:g} [{min(values)}-{max(values)}]"


def _config_table(stats: Sequence[ConfigStats]) -> list[str]:
    out = [
        '<div class="scroll"><table>',
        "<thead><tr><th>configuration</th><th>trials</th><th>failures</th><th>errors</th>"
        "<th>failure rate [95% Wilson CI]</th><th>median time to violation</th>"
        "<th>max time to violation</th>"
        '<th title="distinct conflicting location pairs two workers took in that order on one '
        'object: how much of the races a run exercised, clean or not">interleaving coverage '
        "median [min-max]</th></tr></thead>",
        "<tbody>",
    ]
    for s in stats:
        row_class = ' class="failing"' if s.failures else ""
        out.append(
            f'<tr{row_class}><td class="config">{_e(s.config_key)}</td>'
            f'<td class="num">{s.trials}</td><td class="num">{s.failures}</td>'
            f'<td class="num">{s.errors}</td><td class="num">{_e(_rate(s))}</td>'
            f'<td class="num">{_e(_seconds(s.median_time_to_violation_s))}</td>'
            f'<td class="num">{_e(_seconds(s.max_time_to_violation_s))}</td>'
            f'<td class="num">{_e(_coverage(s))}</td></tr>'
        )
    out += ["</tbody>", "</table></div>"]
    return out


def _swimlane(picture: Published | None) -> list[str]:
    """The copied SVG as an image (an image runs no script), linked to the file itself,
    where its tooltips work."""
    if picture is None or (picture.href is None and picture.problem is None):
        return ['<p class="meta">no swimlane recorded (a campaign of an earlier shmstress, '
                "or a failure without a recording)</p>"]
    if picture.href is None:
        return [f'<p class="meta">The recorded swimlane is not shown: '
                f"{_e(picture.problem)}.</p>"]
    link = _href(picture.href)
    return [
        '<p class="meta">One column per worker, one row per step; the steps the explanation '
        "tells are red, long stretches of other steps are folded. Open the picture by itself "
        f'(<a href="{link}">swimlane.svg</a>) and hover a step for its fields.</p>',
        f'<div class="swimlane"><a href="{link}"><img src="{link}" '
        'alt="Swimlane: who did what when, one column per worker"></a></div>',
    ]


def _failure_section(
    index: int, group: FailureGroup, bundle: Published | None, picture: Published | None = None,
    new: NewFailures | None = None, out_dir: Path | None = None,
) -> list[str]:
    rep = group.representative
    title = f"{group.variant}: {group.invariant}"
    if group.message_first_line:
        title += f" \u2014 {group.message_first_line}"
    badge = (f' <span class="new" title="seen in {_e(new.latest)}, not in {_e(new.previous)}">'
             "new</span>" if new is not None and new.is_new(group) else "")
    configs = "".join(
        f'<li>{_e(key)} <span class="meta">\u00d7{n}</span></li>' for key, n in group.config_counts
    )
    out = [
        f'<section class="failure" id="failure-{index}">',
        f"<h3>{_e(title)}{badge}</h3>",
        f"<p><strong>{counted(group.count, 'trial')}</strong> "
        f"({_e(_program(rep, group))}), in these configurations:</p>",
        f"<ul>{configs}</ul>",
        f'<p class="meta">Shown: trial {_e(rep.trial if rep.trial is not None else "?")} '
        f"of campaign {_e(rep.campaign)}, seed {_e(rep.seed if rep.seed is not None else '?')}"
        f", {_e(rep.config_key)} (the quickest reproduction whose bundle is at hand).</p>",
        f'<p class="meta">Seen in {_e(counted(len(group.campaigns), "campaign"))}: '
        f"{_e(_campaign_list(group.campaigns))}. Shown trial ran "
        f"{_e(_provenance_line(rep))}.</p>",
    ]
    if rep.violation is not None and "\n" in rep.violation.message.strip():
        out += ["<h4>Message</h4>", f"<pre>{_e(rep.violation.message.rstrip())}</pre>"]
    out += ["<h4>Log snippet</h4>", _pre_or_note(rep.log_snippet, "no log snippet recorded")]
    out += ["<h4>Explanation</h4>", _pre_or_note(rep.explanation, "no explanation recorded")]
    out += ["<h4>Who did what when</h4>", *_swimlane(picture)]
    out += ["<h4>Reproduce</h4>", *_reproduce(rep, bundle, _scenario_code(rep, out_dir))]
    out.append("</section>")
    return out


def _program(rep: Trial, group: FailureGroup) -> str:
    """What the failure's trials ran: a tracker, or a plain-code scenario."""
    return f"scenario {rep.scenario}" if rep.scenario else f"tracker {group.tracker}"


_CAMPAIGNS_LISTED = 4
"""Campaigns named one by one under a failure; a month of nights shows its ends."""


def _campaign_list(campaigns: Sequence[str]) -> str:
    if len(campaigns) <= _CAMPAIGNS_LISTED:
        return ", ".join(campaigns)
    return f"{campaigns[0]} ... {', '.join(campaigns[-(_CAMPAIGNS_LISTED - 1):])}"


def _provenance_line(trial: Trial) -> str:
    commit = (f"commit {trial.code_commit[:_COMMIT_SHOWN]}" if trial.code_commit
              else "no recorded commit")
    parts = [commit,
             f"shmstress {trial.shmstress_version or '(version not recorded)'}",
             f"Python {trial.python_version or '(not recorded)'}",
             f"on {trial.host or '(host not recorded)'}"]
    return ", ".join(parts)


def _scenario_code(rep: Trial, out_dir: Path | None) -> tuple[str, ...]:
    """``--code FILE`` for a scenario's bundle replayed from the page's directory: a bundle
    imports code only from below where it is replayed unless named, and the scenario's
    file is outside the report. The record names it relative to its results' directory
    (``campaign.record.scenario_record``); here it is made relative to the page."""
    if rep.scenario is None or out_dir is None or not rep.replay_command:
        return ()
    try:
        words = shlex.split(rep.replay_command)
    except ValueError:
        return ()
    if "--code" not in words[:-1]:
        return ()
    code = rep.source.parent / words[words.index("--code") + 1]
    return ("--code", os.path.relpath(code, out_dir))


def _reproduce(rep: Trial, bundle: Published | None, code: tuple[str, ...] = ()) -> list[str]:
    """The bundle replay first (the very schedule), then the seeded rerun; ``code``: the
    options that let the bundle's code run from the page's directory."""
    out: list[str] = []
    copied = bundle.href if bundle is not None else None
    if copied is not None:
        # Each failure's shrunk bundle gets a name of its own (the bundle's, unique), so
        # running the commands of two failures never overwrites the first one's result.
        small = f"{PurePosixPath(copied).stem}.small.json"
        out += [
            f'<p>Replay the recorded schedule (<a href="{_href(copied)}">repro bundle</a>), '
            "from the directory of this page:</p>",
            f"<pre><code>{_e(_command('shmstress', 'replay', copied, *code))}</code></pre>",
            "<p>Shrink it to the fewest steps, preemptions and workers, then replay the "
            "shrunk bundle to read its explanation:</p>",
            f"<pre><code>{_e(_command('shmstress', 'shrink', copied, '-o', small, *code))}"
            "</code></pre>",
            f"<pre><code>{_e(_command('shmstress', 'replay', small, *code))}</code></pre>",
        ]
    elif bundle is not None and bundle.problem:
        out.append(f'<p class="meta">Its repro bundle <code>{_e(rep.bundle)}</code> is not '
                   f"in this report: {_e(bundle.problem)}.</p>")
    elif rep.bundle:
        replay = _recorded_command(rep.replay_command)
        out.append(
            f'<p class="meta">Its repro bundle <code>{_e(rep.bundle)}</code> was not found '
            f"next to <code>{_e(rep.source)}</code>"
            + (f"; in the campaign directory that wrote it: <code>{_e(replay)}</code>"
               if replay else "") + "</p>"
        )
    rerun = _recorded_command(rep.rerun_command or (None if rep.bundle else
                                                    rep.replay_command))
    if rerun:
        out.append(
            '<p class="meta">Rerun the configuration with the same seed (a free run finds '
            "the race again with high probability but not on the same schedule; a controlled "
            "run repeats its executions): "
            f"<code>{_e(rerun)}</code></p>"
        )
    if not out:
        out.append('<p class="meta">No replay command recorded.</p>')
    return out


def _error_table(trials: Sequence[Trial]) -> list[str]:
    counts: dict[tuple[str, str], int] = {}
    for t in trials:
        if t.outcome == "error":
            key = (t.config_key, t.exit_reason or "(no exit reason)")
            counts[key] = counts.get(key, 0) + 1
    if not counts:
        return []
    out = [
        '<h2 id="errors">Errored trials</h2>',
        '<p class="meta">Trials where the harness itself failed; they carry no verdict.</p>',
        "<table><thead><tr><th>configuration</th><th>exit reason</th><th>count</th></tr></thead>",
        "<tbody>",
    ]
    for (config_key, reason), n in sorted(counts.items()):
        out.append(
            f'<tr><td>{_e(config_key)}</td><td>{_e(reason)}</td><td class="num">{n}</td></tr>'
        )
    out += ["</tbody></table>"]
    return out


def render_index(
    out_dir: Path,
    *,
    trials: Sequence[Trial],
    stats: Sequence[ConfigStats],
    failures: Sequence[FailureGroup],
    plots: Sequence[PlotImage],
    bundles: Mapping[FailureGroup, Published] | None = None,
    swimlanes: Mapping[FailureGroup, Published] | None = None,
    warnings: Sequence[str] = (),
    sources: Sequence[Path] = (),
    title: str = "shmstress campaign report",
    skipped_lines: int = 0,
    provenance: Sequence[CampaignProvenance] = (),
    new: NewFailures | None = None,
) -> str:
    """The page as a string; image paths are made relative to ``out_dir``.

    ``bundles``: the copied repro bundle of each failure, relative to ``out_dir``;
    ``swimlanes``: the copied swimlane picture of each failure; ``provenance``: what each
    campaign ran; ``new``: the failures to mark new.
    """
    bundles = bundles or {}
    swimlanes = swimlanes or {}
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{_e(title)}</h1>",
        *_summary(trials, sources),
        '<nav><a href="#charts">Charts</a><a href="#configurations">Configurations</a>'
        '<a href="#failures">Distinct failures</a>'
        + ('<a href="#campaigns">Campaigns</a>' if provenance else "")
        + (
            '<a href="#errors">Errored trials</a>'
            if any(t.outcome == "error" for t in trials)
            else ""
        )
        + "</nav>",
    ]
    if warnings:
        items = "".join(f"<li>{_e(w)}</li>" for w in warnings)
        skipped = (f" ({counted(skipped_lines, 'line')} of the results skipped, not counted "
                   "in any rate)" if skipped_lines else "")
        parts.append(f'<div class="warning"><strong>Warnings</strong>{_e(skipped)}'
                     f"<ul>{items}</ul></div>")

    if plots:
        parts.append('<h2 id="charts">Charts</h2>')
    for plot in plots:
        src = _href(Path(os.path.relpath(plot.path, out_dir)).as_posix())
        parts.append(
            f'<figure><a href="{src}"><img src="{src}" alt="{_e(plot.alt)}"></a>'
            f"<figcaption>{_e(plot.caption)}</figcaption></figure>"
        )

    failing = sum(1 for s in stats if s.failures)
    parts.append(f'<h2 id="configurations">Configurations ({len(stats)})</h2>')
    parts.append(
        f'<p class="meta">{failing} of {len(stats)} configurations saw at least one violation '
        "(marked red on the left).</p>"
    )
    parts += _config_table(stats)

    parts.append(f'<h2 id="failures">Distinct failures ({len(failures)})</h2>')
    if not failures:
        parts.append('<p class="meta">No violations were found.</p>')
    else:
        parts.append(
            '<p class="meta">Violations grouped by variant, invariant and the first line of '
            "the message, most frequent first.</p>"
        )
        parts += _new_note(new, failures)
    for i, group in enumerate(failures, start=1):
        parts += _failure_section(i, group, bundles.get(group), swimlanes.get(group), new,
                                  out_dir)

    parts += _provenance_table(provenance)
    parts += _error_table(trials)
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


def write_index(
    out_dir: Path,
    *,
    trials: Sequence[Trial],
    stats: Sequence[ConfigStats],
    failures: Sequence[FailureGroup],
    plots: Sequence[PlotImage],
    bundles: Mapping[FailureGroup, Published] | None = None,
    swimlanes: Mapping[FailureGroup, Published] | None = None,
    warnings: Sequence[str] = (),
    sources: Sequence[Path] = (),
    skipped_lines: int = 0,
    provenance: Sequence[CampaignProvenance] = (),
    new: NewFailures | None = None,
) -> Path:
    """Write ``out_dir/index.html`` (whole or not at all) and return its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "index.html"
    text = render_index(
        out_dir,
        trials=trials,
        stats=stats,
        failures=failures,
        plots=plots,
        bundles=bundles,
        swimlanes=swimlanes,
        warnings=warnings,
        sources=sources,
        skipped_lines=skipped_lines,
        provenance=provenance,
        new=new,
    )
    return write_text(path, text)
