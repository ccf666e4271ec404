"""Scoring `memlens.core.redact.engine` on labelled sets, and its command line.

``python -m memlens.core.redact --evaluate FILE.jsonl`` (the package's ``__main__``
runs this module's :func:`main`; ``python -m memlens.core.redact.evaluate`` too) prints
recall and precision; ``--by family,context`` breaks them down per group
(``--by group,context`` per the lines' optional ``group`` field).
``python -m memlens.core.redact.evaluate FILE`` redacts a file to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memlens.core.redact.engine import redact
from memlens.core.redact.rules import MARKER_PREFIX, MARKER_RE


@dataclass(frozen=True, slots=True)
class LabelledExample:
    """One line of a labelled secrets file.

    Attributes:
        id: Stable identifier.
        text: A realistic memory snippet.
        secret: The exact secret substring of ``text`` (``None`` for look-alikes).
        format: The credential format (or look-alike family).
        label: ``"secret"`` or ``"lookalike"``.
        group: An optional class of the example (``prefixed``/``bare`` in the
            generated gitleaks set), ``""`` when the line names none.
    """

    id: str
    text: str
    secret: str | None
    format: str
    label: str
    group: str = ""


def load_labelled(path: Path) -> list[LabelledExample]:
    """Read a labelled JSONL file, undoing its storage obfuscation.

    Lines with ``"obfuscation": "reversed"`` store ``text`` and ``secret``
    reversed (character order), so that the committed file contains no prefix,
    key name or shape that a secret scanner recognises. Loading restores the
    real, format-valid text.

    Args:
        path: The ``.jsonl`` file.

    Returns:
        The decoded examples, in file order.

    Raises:
        ValueError: A line is malformed or its secret is not in its text.
    """
    examples: list[LabelledExample] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        raw = json.loads(line)
        if raw.get("comment"):  # a provenance header such as {"source": ..., "comment": true}
            continue
        text, secret = raw["text"], raw.get("secret")
        if raw.get("obfuscation") == "reversed":
            text = text[::-1]
            secret = secret[::-1] if secret is not None else None
        if raw["label"] not in ("secret", "lookalike"):
            raise ValueError(f"{path}:{lineno}: label must be 'secret' or 'lookalike'")
        if raw["label"] == "secret" and (not secret or secret not in text):
            raise ValueError(f"{path}:{lineno}: secret missing from text")
        examples.append(
            LabelledExample(
                raw["id"], text, secret, raw["format"], raw["label"], str(raw.get("group", ""))
            )
        )
    return examples


@dataclass(frozen=True, slots=True)
class Evaluation:
    """Recall and precision of `redact` on a labelled set.

    Attributes:
        secrets: Number of true-secret examples.
        recalled: Secrets whose exact text is gone from the output, with a marker.
        exact: Secrets redacted with nothing else on the line changed.
        lookalikes: Number of look-alike examples.
        preserved: Look-alikes whose text came out unchanged.
        formats: Distinct formats among the true secrets.
        failures: ``id: reason`` for every miss or false alarm.
    """

    secrets: int
    recalled: int
    exact: int
    lookalikes: int
    preserved: int
    formats: int
    failures: tuple[str, ...]

    @property
    def recall(self) -> float:
        """Share of true secrets removed."""
        return self.recalled / self.secrets if self.secrets else 1.0

    @property
    def lookalike_precision(self) -> float:
        """Share of look-alikes left untouched."""
        return self.preserved / self.lookalikes if self.lookalikes else 1.0

    @property
    def precision(self) -> float:
        """Redacted secrets / (redacted secrets + altered look-alikes)."""
        false_alarms = self.lookalikes - self.preserved
        total = self.recalled + false_alarms
        return self.recalled / total if total else 1.0

    def summary(self) -> str:
        """A short human-readable report."""
        lines = [
            f"secrets:     {self.secrets} across {self.formats} formats",
            f"recall:      {self.recall:.3f} ({self.recalled}/{self.secrets})",
            f"exact spans: {self.exact}/{self.secrets} (nothing but the secret replaced)",
            f"look-alikes: {self.lookalikes}",
            f"look-alike precision (left unchanged): {self.lookalike_precision:.3f} "
            f"({self.preserved}/{self.lookalikes})",
            f"precision:   {self.precision:.3f}",
        ]
        lines.extend(f"  FAIL {f}" for f in self.failures)
        return "\n".join(lines)


def evaluate(examples: Iterable[LabelledExample]) -> Evaluation:
    """Run `redact` over labelled examples and score it.

    Args:
        examples: Examples as returned by `load_labelled`.

    Returns:
        The scores and the list of failures.
    """
    secrets = recalled = exact = lookalikes = preserved = 0
    formats: set[str] = set()
    failures: list[str] = []
    for ex in examples:
        out = redact(ex.text).text
        if ex.label == "lookalike":
            lookalikes += 1
            if out == ex.text:
                preserved += 1
            else:
                failures.append(f"{ex.id}: look-alike altered -> {out!r}")
            continue
        secrets += 1
        formats.add(ex.format)
        assert ex.secret is not None
        if ex.secret not in out and MARKER_PREFIX in out:
            recalled += 1
            start = ex.text.index(ex.secret)
            before, after = ex.text[:start], ex.text[start + len(ex.secret) :]
            body = out[len(before) : len(out) - len(after)] if len(out) >= len(ex.text) - len(
                ex.secret
            ) else ""
            if out.startswith(before) and out.endswith(after) and MARKER_RE.fullmatch(body):
                exact += 1
        else:
            failures.append(f"{ex.id}: {ex.format} secret survived -> {out!r}")
    return Evaluation(
        secrets, recalled, exact, lookalikes, preserved, len(formats), tuple(failures)
    )


@dataclass(frozen=True, slots=True)
class GroupScore:
    """How many examples of one group `redact` handled.

    Attributes:
        handled: Secrets removed (exact text gone, a marker present), or
            look-alikes left unchanged.
        total: Examples in the group.
    """

    handled: int
    total: int

    @property
    def share(self) -> float:
        """``handled / total`` (1.0 for an empty group)."""
        return self.handled / self.total if self.total else 1.0


_GROUP_FIELDS = ("family", "context")
_ALL_FIELDS = (*_GROUP_FIELDS, "group")


def _fields(ex: LabelledExample) -> dict[str, str]:
    """``family``, ``context`` and ``group`` of an example: ``format`` is ``family/context``.

    A format without ``/`` (the internal set) is its own family, and its context
    is ``secret`` or ``fp`` after the label. ``group`` is the line's ``group``
    field, ``-`` when it has none.
    """
    family, sep, context = ex.format.rpartition("/")
    if not sep:
        family, context = ex.format, ("secret" if ex.label == "secret" else "fp")
    return {"family": family, "context": context, "group": ex.group or "-"}


def score_groups(
    examples: Iterable[LabelledExample], by: Sequence[str] = _GROUP_FIELDS
) -> dict[tuple[str, ...], GroupScore]:
    """Per-group scores, e.g. per ``(family, context)`` or per ``(context,)``.

    Args:
        examples: Examples as returned by `load_labelled`.
        by: Names among ``family``, ``context`` and ``group``.

    Returns:
        The score of each group, keyed by the tuple of its field values.
    """

    if not by or any(name not in _ALL_FIELDS for name in by):
        raise ValueError(f"group by one or more of {_ALL_FIELDS}, not {tuple(by)}")
    handled: Counter[tuple[str, ...]] = Counter()
    total: Counter[tuple[str, ...]] = Counter()
    for ex in examples:
        fields = _fields(ex)
        key = tuple(fields[name] for name in by)
        out = redact(ex.text).text
        total[key] += 1
        if ex.label == "lookalike":
            handled[key] += out == ex.text
        else:
            handled[key] += ex.secret is not None and ex.secret not in out and MARKER_PREFIX in out
    return {key: GroupScore(handled[key], total[key]) for key in sorted(total)}


def _print_groups(path: Path, by: str) -> int:
    try:
        groups = score_groups(load_labelled(path), [b.strip() for b in by.split(",")])
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: cannot evaluate {path}: {exc}", file=sys.stderr)
        return 2
    for key, score in groups.items():
        print(f"{' '.join(key):40s} {score.handled:4d}/{score.total:<4d} {score.share:.3f}")
    return 0


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m memlens.core.redact.evaluate",
        description="Redact secrets from a file (or stdin), or score the redactor "
        "on a labelled JSONL set.",
    )
    parser.add_argument("file", nargs="?", type=Path, help="file to redact (default: stdin)")
    parser.add_argument(
        "--evaluate", type=Path, metavar="JSONL", help="score recall/precision on a labelled set"
    )
    parser.add_argument("--json", action="store_true", help="print the evaluation as JSON")
    parser.add_argument(
        "--by",
        metavar="FIELDS",
        help="with --evaluate: share handled per group, e.g. 'context', 'family,context' "
        "or 'group,context' (group: a line's 'group' field, e.g. prefixed/bare)",
    )
    args = parser.parse_args(argv)
    if args.evaluate is not None and args.by:
        return _print_groups(args.evaluate, args.by)
    if args.evaluate is not None:
        try:
            result = evaluate(load_labelled(args.evaluate))
        except (OSError, ValueError, KeyError) as exc:
            print(f"error: cannot evaluate {args.evaluate}: {exc}", file=sys.stderr)
            return 2
        if args.json:
            payload = {
                "secrets": result.secrets,
                "formats": result.formats,
                "recall": result.recall,
                "exact": result.exact,
                "lookalikes": result.lookalikes,
                "lookalike_precision": result.lookalike_precision,
                "precision": result.precision,
                "failures": list(result.failures),
            }
            print(json.dumps(payload, indent=2))
        else:
            print(result.summary())
        return 0
    try:
        data = args.file.read_text(encoding="utf-8") if args.file else sys.stdin.read()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2

    result_r = redact(data)
    sys.stdout.write(result_r.text)
    kinds = Counter(f.kind for f in result_r.findings)
    summary = ", ".join(f"{k}={n}" for k, n in sorted(kinds.items())) or "nothing"
    print(f"redacted: {summary}", file=sys.stderr)
    return 0


def main() -> None:
    """Entry point of ``python -m memlens.core.redact.engine[_eval]``."""
    try:
        raise SystemExit(_main())
    except BrokenPipeError:  # e.g. piped into `head`: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(0) from None


if __name__ == "__main__":
    main()
