"""The hierarchical knowledge base and its SQLite FTS5 (BM25) retrieval.

Documents are plain files under ``knowledge/`` (``constraints/``, ``guidance/``, ``hardware/*.md``,
and H6's verified ``code_samples/*.py``), a workspace's own ``.kernelevolve/knowledge/**/*.md``,
and learned entries distilled from winning candidates (kept in history, handed in by the caller).
Markdown documents open with TOML front matter between ``+++`` lines::

    +++
    title = "Coalesced loads and vector widths"
    platforms = ["any"]            # or ["hopper", "ampere", "blackwell", "cdna3"]
    kinds = ["memory"]             # memory | compute | latency | correctness | compile | any
    phases = ["optimise"]          # draft | debug | optimise | any
    tags = ["coalescing", "tl.load"]
    summary = "One line the prompt shows beside the title."
    +++

The index lives in a cache database, built on first use and rebuilt whenever a document file
(path, size, mtime) or the set of learned entries changes.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

BUILTIN_ROOT = Path(__file__).resolve().parent
BUILTIN_DIRS = ("constraints", "guidance", "hardware")
CODE_SAMPLES = "code_samples"
WORKSPACE_DIR = Path(".kernelevolve") / "knowledge"
PLATFORMS = ("hopper", "ampere", "blackwell", "cdna3")
KINDS = ("memory", "compute", "latency", "correctness", "compile")
PHASES = ("draft", "debug", "optimise")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "with",
    ]
)


class KnowledgeError(ValueError):
    """A document cannot be used (bad front matter, unknown filter value); one line, names the file."""


@dataclass(frozen=True)
class Document:
    id: str  # "guidance/autotuning", "code_samples/rmsnorm", "workspace/notes", "learned/3"
    title: str
    source: str  # "builtin", "code_sample", "workspace", "learned"
    path: str
    body: str
    summary: str = ""
    platforms: tuple[str, ...] = ("any",)
    kinds: tuple[str, ...] = ("any",)
    phases: tuple[str, ...] = ("any",)
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Hit:
    document: Document
    score: float  # BM25 (lower is better in SQLite; we negate so higher is better)
    snippet: str


@dataclass
class _Sources:
    files: list[tuple[str, Path]] = field(default_factory=list)  # (source, path)
    learned: list[Document] = field(default_factory=list)


def parse_markdown(text: str, *, id: str, source: str, path: str) -> Document:
    """Split TOML front matter from the body; a document without front matter is 'any'/'any'/'any'."""
    meta: dict[str, object] = {}
    body = text
    if text.startswith("+++"):
        end = text.find("\n+++", 3)
        if end < 0:
            raise KnowledgeError(f"{path}: front matter opened with +++ but never closed")
        try:
            meta = tomllib.loads(text[3:end])
        except tomllib.TOMLDecodeError as exc:
            raise KnowledgeError(f"{path}: front matter is not valid TOML: {exc}") from exc
        body = text[end + 4 :].lstrip("\n")
    title = str(meta.get("title") or _first_heading(body) or id)
    return Document(
        id=id,
        title=title,
        source=source,
        path=path,
        body=body,
        summary=str(meta.get("summary", "")),
        platforms=_values(meta, "platforms", PLATFORMS, path),
        kinds=_values(meta, "kinds", KINDS, path),
        phases=_values(meta, "phases", PHASES, path),
        tags=tuple(str(t) for t in _as_list(meta.get("tags", []))),
    )


def parse_code_sample(text: str, *, id: str, path: str) -> Document:
    """A verified Triton template: its module docstring is the summary, the source is the body."""
    match = re.match(r'\s*(?:#[^\n]*\n\s*)*[rRuU]?("""|\'\'\')(.*?)\1', text, re.S)
    doc = match.group(2).strip() if match else ""
    first = doc.splitlines()[0].strip() if doc else id
    return Document(
        id=id,
        title=f"Code sample: {first}",
        source="code_sample",
        path=path,
        body=text,
        summary=doc[:400],
        phases=("draft", "optimise"),
        tags=("template", "verified"),
    )


def _first_heading(body: str) -> str | None:
    for line in body.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return None


def _as_list(value: object) -> list[object]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _values(meta: dict[str, object], key: str, allowed: tuple[str, ...], path: str) -> tuple[str, ...]:
    values = tuple(str(v) for v in _as_list(meta.get(key, ["any"])))
    bad = [v for v in values if v != "any" and v not in allowed]
    if bad:
        raise KnowledgeError(f"{path}: {key} has unknown value(s) {bad}; allowed: any, {', '.join(allowed)}")
    return values or ("any",)


class KnowledgeBase:
    """Retrieval over the built-in, workspace and learned documents.

    ``cache_path`` is the index database (default: ``<workspace>/.kernelevolve/cache/kb.sqlite``,
    or an in-memory index without a workspace). Thread-safe: one connection behind a lock. A
    workspace document with bad front matter raises ``KnowledgeError`` (``strict``, the CLI) or is
    skipped and named in ``problems`` (the search, which must not die of a typo in a note).
    """

    def __init__(
        self,
        *,
        workspace: Path | None = None,
        cache_path: Path | None = None,
        learned: Iterable[Document] = (),
        builtin_root: Path = BUILTIN_ROOT,
        strict: bool = True,
    ) -> None:
        self.workspace = workspace
        self.strict = strict  # False: skip unusable workspace documents, listing them in ``problems``
        self.problems: list[str] = []
        self.builtin_root = builtin_root
        self._learned = list(learned)
        if cache_path is None and workspace is not None:
            cache_path = workspace / ".kernelevolve" / "cache" / "kb.sqlite"
        self.cache_path = cache_path
        if cache_path is not None:
            cache_path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(cache_path) if cache_path else ":memory:", check_same_thread=False)
        self._lock = threading.Lock()
        self.rebuilt = False  # whether the last refresh rebuilt the index (for tests and `kb search -v`)
        self.refresh()

    def close(self) -> None:
        self._conn.close()

    def set_learned(self, learned: Iterable[Document]) -> None:
        self._learned = list(learned)
        self.refresh()

    # -- index -------------------------------------------------------------------------------
    def _sources(self) -> _Sources:
        src = _Sources(learned=list(self._learned))
        for sub in BUILTIN_DIRS:
            src.files += [("builtin", p) for p in sorted((self.builtin_root / sub).rglob("*.md"))]
        src.files += [("code_sample", p) for p in sorted((self.builtin_root / CODE_SAMPLES).rglob("*.py"))]
        if self.workspace is not None:
            src.files += [("workspace", p) for p in sorted((self.workspace / WORKSPACE_DIR).rglob("*.md"))]
        return src

    def _signature(self, src: _Sources) -> str:
        h = hashlib.sha256()
        for source, path in src.files:
            st = path.stat()
            h.update(f"{source}|{path}|{st.st_size}|{st.st_mtime_ns}\n".encode())
        for doc in src.learned:
            h.update(f"{doc.id}|{hashlib.sha256(doc.body.encode()).hexdigest()}\n".encode())
        return h.hexdigest()

    def _load(self, src: _Sources, problems: list[str]) -> list[Document]:
        docs: list[Document] = []
        for source, path in src.files:
            if path.name.startswith("_") or path.name == "__init__.py":
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                if source != "workspace":
                    raise
                problems.append(f"{path}: cannot be read: {exc}")
                continue
            if source == "code_sample":
                rel = path.relative_to(self.builtin_root).with_suffix("")
                docs.append(parse_code_sample(text, id=rel.as_posix(), path=str(path)))
            elif source == "workspace":
                assert self.workspace is not None
                rel = path.relative_to(self.workspace / WORKSPACE_DIR).with_suffix("")
                try:
                    docs.append(
                        parse_markdown(text, id=f"workspace/{rel.as_posix()}", source=source, path=str(path))
                    )
                except KnowledgeError as exc:  # a user's document: skipped and reported, never fatal here
                    problems.append(str(exc))
            else:
                rel = path.relative_to(self.builtin_root).with_suffix("")
                docs.append(parse_markdown(text, id=rel.as_posix(), source=source, path=str(path)))
        return docs + src.learned

    def refresh(self) -> None:
        """Rebuild the index when any document changed since it was built."""
        src = self._sources()
        signature = self._signature(src)
        with self._lock:
            c = self._conn
            c.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            row = c.execute("SELECT value FROM meta WHERE key = 'signature'").fetchone()
            self.rebuilt = row is None or row[0] != signature
            if not self.rebuilt:
                row = c.execute("SELECT value FROM meta WHERE key = 'problems'").fetchone()
                self.problems = json.loads(row[0]) if row else []
                self._check_strict()
                return
            problems: list[str] = []
            docs = self._load(src, problems)
            with c:
                c.execute("DROP TABLE IF EXISTS docs")
                c.execute("DROP TABLE IF EXISTS fts")
                c.execute(
                    "CREATE TABLE docs (rowid INTEGER PRIMARY KEY, id TEXT UNIQUE, json TEXT,"
                    " platforms TEXT, kinds TEXT, phases TEXT)"
                )
                c.execute(
                    "CREATE VIRTUAL TABLE fts USING fts5(title, tags, summary, body, tokenize='porter unicode61')"
                )
                for n, doc in enumerate(docs, start=1):
                    c.execute(
                        "INSERT INTO docs VALUES (?, ?, ?, ?, ?, ?)",
                        (
                            n,
                            doc.id,
                            json.dumps(doc.__dict__),
                            *(_pad(v) for v in (doc.platforms, doc.kinds, doc.phases)),
                        ),
                    )
                    c.execute(
                        "INSERT INTO fts (rowid, title, tags, summary, body) VALUES (?, ?, ?, ?, ?)",
                        (n, doc.title, " ".join(doc.tags), doc.summary, doc.body),
                    )
                c.execute("INSERT OR REPLACE INTO meta VALUES ('signature', ?)", (signature,))
                c.execute("INSERT OR REPLACE INTO meta VALUES ('problems', ?)", (json.dumps(problems),))
            self.problems = problems
            self._check_strict()

    def _check_strict(self) -> None:
        if self.strict and self.problems:
            more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            raise KnowledgeError(self.problems[0] + more)

    # -- queries -----------------------------------------------------------------------------
    def documents(self) -> list[Document]:
        with self._lock:
            rows = self._conn.execute("SELECT json FROM docs ORDER BY id").fetchall()
        return [_doc(r[0]) for r in rows]

    def get(self, doc_id: str) -> Document | None:
        with self._lock:
            row = self._conn.execute("SELECT json FROM docs WHERE id = ?", (doc_id,)).fetchone()
        return _doc(row[0]) if row else None

    def search(
        self,
        query: str,
        *,
        platform: str | None = None,
        kind: str | None = None,
        phase: str | None = None,
        source: str | None = None,
        limit: int = 5,
    ) -> list[Hit]:
        """BM25 over title (x10), tags (x5), summary (x3) and body, filtered by front matter.

        A filter keeps documents that name the value or say "any". An empty query lists the
        filtered documents by id.
        """
        for value, allowed, what in (
            (platform, PLATFORMS, "platform"),
            (kind, KINDS, "kind"),
            (phase, PHASES, "phase"),
        ):
            if value is not None and value not in allowed:
                raise KnowledgeError(f"unknown {what} {value!r}; choose one of {', '.join(allowed)}")
        where, params = [], []
        for column, value in (("platforms", platform), ("kinds", kind), ("phases", phase)):
            if value is not None:
                where.append(f"(d.{column} LIKE ? OR d.{column} LIKE '% any %')")
                params.append(f"% {value} %")
        if source is not None:
            where.append("json_extract(d.json, '$.source') = ?")
            params.append(source)
        match = fts_query(query)
        with self._lock:
            if match:
                sql = (
                    "SELECT d.json, -bm25(fts, 10.0, 5.0, 3.0, 1.0),"
                    " snippet(fts, 3, '', '', ' … ', 32) FROM fts JOIN docs d ON d.rowid = fts.rowid"
                    " WHERE fts MATCH ?"
                    + "".join(f" AND {w}" for w in where)
                    + " ORDER BY bm25(fts, 10.0, 5.0, 3.0, 1.0) LIMIT ?"
                )
                rows = self._conn.execute(sql, [match, *params, limit]).fetchall()
            else:
                sql = "SELECT d.json, 0.0, '' FROM docs d" + (
                    " WHERE " + " AND ".join(where) if where else ""
                )
                rows = self._conn.execute(sql + " ORDER BY d.id LIMIT ?", [*params, limit]).fetchall()
        return [Hit(_doc(j), float(score), snippet or _doc(j).summary) for j, score, snippet in rows]


def fts_query(text: str) -> str:
    """User text -> an FTS5 query that cannot be a syntax error: quoted terms joined with OR."""
    words = [w.lower() for w in re.findall(r"[A-Za-z0-9_]+", text)]
    terms = list(dict.fromkeys(w for w in words if w not in _STOPWORDS and len(w) > 1))
    return " OR ".join(f'"{t}"' for t in terms)


def _pad(values: tuple[str, ...]) -> str:
    return " " + " ".join(values) + " "


def _doc(data: str) -> Document:
    raw = json.loads(data)
    for key in ("platforms", "kinds", "phases", "tags"):
        raw[key] = tuple(raw[key])
    return Document(**raw)
