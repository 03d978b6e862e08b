"""Parsing a Keycloak server's JSON answer without letting its shape decide the operator's memory.

A byte cap alone does not bound memory: parsed JSON costs what its values cost, not what its text does, and
`[{},{},...]` spends three bytes per dict of about seventy (one 8 MiB answer of it parses to about 194 MiB:
ADR 0012). So an answer is refused unless it holds at most `max_values` JSON values at any depth, counted on
the text before anything is built, and a listing (a top-level array: clients, roles, groups, scopes, users)
at most `max_entries` entries, counted on the text too: nothing is built for an answer refused.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# A JSON string (escapes included), or a structural character outside one. Matched left to right, a `"`
# found between strings always opens the next one, so no match starts inside a string.
_STRING_OR_MARK = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[,\[{\]}]')
_SPACE = re.compile(r"[ \t\n\r]*")

# Entries of one listing. A large realm holds some thousands of clients, roles or groups; 20,000 leaves room
# while stopping an answer made of tiny entries early.
DEFAULT_MAX_ENTRIES = 20_000
# JSON values in one answer, at any depth. The densest shape costs about 86 bytes of memory per value (an
# object of distinct keys each holding `{}`), so at most about 22 MiB parsed per answer; a real listing
# holds 20,000 roles or groups, or about 3,400 full client representations (bench/bench_json_bounds.py).
DEFAULT_MAX_VALUES = 250_000


class TooLarge(ValueError):
    """The answer holds more than a limit allows; the message says which limit, never what it held."""


@dataclass(frozen=True)
class JsonLimits:
    max_entries: int = DEFAULT_MAX_ENTRIES
    max_values: int = DEFAULT_MAX_VALUES


@dataclass(frozen=True)
class Shape:
    """What a JSON text would build, read from its text alone (exact for valid JSON; a text that is not JSON
    is refused by the parser anyway)."""

    values: int  # at least the values it holds, at any depth
    entries: int  # the entries of a top-level array; 0 for any other document


def shape(text: str, stop_above: int | None = None) -> Shape:
    """Each value is the document itself, or follows a `[`, a `{` (its object's first member) or a `,`
    outside strings; a top-level array's entries are separated by its commas at depth one.

    Counted match by match, building nothing (stripping the strings out first would build a piece per
    string: 39 MiB for an 8 MiB listing). With `stop_above`, counting stops once the values pass it, so its
    cost follows the limit rather than the answer: valid JSON has at most two strings (a key and its value)
    and one closing bracket per `[`, `{` or `,`, and one string more, so more matches than that mean the
    text is past the limit or not JSON."""
    first = _SPACE.match(text).end()  # type: ignore[union-attr]  # matches the empty string at worst
    listing = text.startswith("[", first)
    empty = listing and text.startswith("]", _SPACE.match(text, first + 1).end())  # type: ignore[union-attr]
    starts = depth = separators = 0
    most_matches = None if stop_above is None else 4 * stop_above + 1
    for matches, match in enumerate(_STRING_OR_MARK.finditer(text), start=1):
        mark = text[match.start()]
        if mark in "[{,":
            starts += 1
            if mark == ",":
                separators += depth == 1
            else:
                depth += 1
            if stop_above is not None and starts >= stop_above:
                return Shape(starts + 1, 0)
        elif mark != '"':
            depth -= 1
        if most_matches is not None and matches > most_matches:
            return Shape(stop_above + 1, 0)  # type: ignore[operator]  # set together with most_matches
    return Shape(starts + 1, separators + 1 if listing and not empty else 0)


def value_bound(text: str, stop_above: int | None = None) -> int:
    """At least as many as the JSON values `text` holds (`shape`)."""
    return shape(text, stop_above).values


def loads(text: str, limits: JsonLimits) -> Any:
    """`json.loads(text)`, or TooLarge before anything is built when it holds more than `limits` allow;
    ValueError (or RecursionError, for nesting deeper than Python's stack) for text that is not JSON."""
    found = shape(text, stop_above=limits.max_values)
    if found.values > limits.max_values:
        raise TooLarge(f"more than {limits.max_values} JSON values")
    if found.entries > limits.max_entries:
        raise TooLarge(f"a listing of more than {limits.max_entries} entries")
    return json.loads(text)
