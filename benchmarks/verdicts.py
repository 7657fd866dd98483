"""The verdicts of docs/results.md and the README, computed from the committed numbers.

``benchmarks/readme_tables.py`` writes no verdict as fixed text: each one here is a small
function of the numbers it judges, and its words are a template in ``WORDS``, picked by that
function. A rerun that moves a number past the line moves the words with it (tests/
test_verdicts.py feeds each function a changed copy of the committed numbers).
"""

from __future__ import annotations

from typing import Iterable, Mapping

#: Round 3's goal: +3 points of complete coverage over the native order, at the session and
#: the turn level, K = 10 (docs/results.md, "Round 3").
GOAL = 3
#: Significance, as every table marks it (exact McNemar p).
ALPHA = 0.05
#: Below this share of questions (%) a policy "almost never" keeps a question's whole gold.
ALMOST_NEVER = 1.0

WORDS: dict[str, dict[str, str]] = {
    # benchmarks/locomo_titles_trial.py: LoCoMo with each turn's speaker as its title
    "titles trial": {
        "lost": "it lost",
        "won": "it won",
        "level": "it changed nothing",
        "mixed": "it was mixed",
    },
    "titles trial, so": {
        "lost": ", so dialogue stores hand over none",
        "won": "; dialogue stores still hand over none",
        "level": ", so dialogue stores hand over none",
        "mixed": "; dialogue stores still hand over none",
    },
    # a policy against the native order on one run, at every K of the run
    "against native": {
        "level": "level with the {order} order",
        "ahead": "ahead of the {order} order",
        "behind": "behind the {order} order",
        "mixed": "mixed against the {order} order",
    },
    # round 3's second candidate (the date channel alone) against the goal on one dataset
    "goal, sentence": {
        "short": "It fell short of {goal:+d} on {data}.",
        "met": "It reached {goal:+d} on {data}.",
    },
    # an option's points on one dataset against the goal, inside the Tried table's outcome
    "goal, phrase": {
        "short": "{data} short of {goal:+d} at K={k}",
        "met": "{data} at {goal:+d} or more at K={k}",
    },
    # what one policy changes against another on the held-out side of the split (a "\n"
    # keeps the line break of the generated page)
    "held-out effect": {
        "nil": "held-out effect is nil on {data} (it changes no question's coverage\nthere)",
        "some": "held-out effect is {effects}",
    },
    # a diversifier against native on every run that has it
    "below native": {
        "everywhere": "it falls below native\neverywhere here",
        "not everywhere": "it falls below native\non {where} (not on {rest})",
    },
    "almost never": {
        "yes": " (on {data} it almost never keeps both gold passages)",
        "no": "",
    },
}


def word(kind: str, verdict: str, **values) -> str:
    """The template ``WORDS[kind][verdict]`` filled with ``values``."""
    return WORDS[kind][verdict].format(**values)


def compare(before: Iterable[float], after: Iterable[float]) -> str:
    """``"won"`` when every ``after`` is above its ``before``, ``"lost"`` when every one is
    below, ``"level"`` when all are equal, else ``"mixed"``."""
    pairs = list(zip(before, after, strict=True))
    if all(a == b for b, a in pairs):
        return "level"
    if all(a > b for b, a in pairs):
        return "won"
    if all(a < b for b, a in pairs):
        return "lost"
    return "mixed"


def against_native(paired: Iterable[Mapping[str, float]], alpha: float = ALPHA) -> str:
    """A policy's paired differences to native (``diff``, ``p_value``): ``"level"`` when none
    is significant, ``"ahead"`` / ``"behind"`` when every one is significant that way, else
    ``"mixed"``."""
    cells = list(paired)
    significant = [c for c in cells if c["p_value"] < alpha]
    if not significant:
        return "level"
    if len(significant) == len(cells) and all(c["diff"] > 0 for c in cells):
        return "ahead"
    if len(significant) == len(cells) and all(c["diff"] < 0 for c in cells):
        return "behind"
    return "mixed"


def meets_goal(gains: Iterable[float], goal: float = GOAL) -> str:
    """``"met"`` when every gain (points; session and turn) reaches ``goal``, else
    ``"short"``."""
    return "met" if min(gains) >= goal else "short"


def same_cells(a: Mapping[str, Mapping[str, float]], b: Mapping[str, Mapping[str, float]]) -> bool:
    """Two policies' rows of a sides table (``{"session K=10": {"policy": value, ...}}``) give
    every cell the same coverage."""
    return a.keys() == b.keys() and all(a[c]["policy"] == b[c]["policy"] for c in a)


def below_everywhere(cells: Mapping[str, Iterable[float]]) -> tuple[list[str], list[str]]:
    """``{run: differences to native}`` -> (the runs where every difference is below 0, the
    others)."""
    below = [run for run, diffs in cells.items() if all(d < 0 for d in diffs)]
    return below, [run for run in cells if run not in below]


def almost_never(values: Iterable[float], limit: float = ALMOST_NEVER) -> bool:
    """Every value (a share of questions, %) is under ``limit``."""
    return all(v < limit for v in values)
