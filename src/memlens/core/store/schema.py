"""The memlens schema: one SQL script per version, applied in order by
:func:`memlens.core.store.db.migrate_schema` (``PRAGMA user_version`` says which ran).

Owned by :mod:`memlens.core.store.db`; a new version appends a script here and bumps
``SCHEMA_VERSION`` in :mod:`memlens.core.store.rows`.
"""

from __future__ import annotations

from memlens.core.store.rows import FTS_TOKENIZER as FTS_TOKENIZER

_SCHEMA_V1 = f"""
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS memory_documents (
    id INTEGER PRIMARY KEY,
    source_kind TEXT NOT NULL DEFAULT 'claude-auto-memory',
    repository TEXT NOT NULL,
    logical_path TEXT NOT NULL,
    source_path TEXT,
    source_root TEXT,
    content TEXT,
    content_hash TEXT,
    source_hash TEXT,
    source_mtime_ns INTEGER,
    source_size INTEGER,
    observed_at REAL NOT NULL,
    front_matter TEXT NOT NULL DEFAULT '{{}}',
    doc_type TEXT,
    doc_name TEXT,
    current_revision_id INTEGER,
    active_revision_id INTEGER,
    projection_status TEXT NOT NULL DEFAULT 'pending'
        CHECK (projection_status IN ('pending','processing','ready','failed','stale')),
    projection_error TEXT,
    projection_attempts INTEGER NOT NULL DEFAULT 0,
    projection_owner TEXT,
    projection_started_at REAL,
    projection_updated_at REAL,
    projection_next_attempt_at REAL,
    tombstoned_at REAL,
    UNIQUE (source_kind, repository, logical_path)
);
CREATE INDEX IF NOT EXISTS idx_documents_status
    ON memory_documents(projection_status, projection_next_attempt_at);
CREATE INDEX IF NOT EXISTS idx_documents_root ON memory_documents(source_root);
CREATE INDEX IF NOT EXISTS idx_documents_hash
    ON memory_documents(repository, content_hash);

CREATE TABLE IF NOT EXISTS memory_revisions (
    id INTEGER PRIMARY KEY,
    document_id INTEGER NOT NULL REFERENCES memory_documents(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    change_kind TEXT NOT NULL
        CHECK (change_kind IN ('create','update','rename','delete','rechunk')),
    content_hash TEXT NOT NULL,
    logical_path TEXT NOT NULL,
    previous_path TEXT,
    snapshot TEXT,
    summary TEXT,
    diff TEXT,
    diff_truncated INTEGER NOT NULL DEFAULT 0,
    size_bytes INTEGER NOT NULL DEFAULT 0,
    line_count INTEGER NOT NULL DEFAULT 0,
    source_mtime_ns INTEGER,
    observed_at REAL NOT NULL,
    chunker_name TEXT,
    chunker_version INTEGER,
    chunker_config TEXT,
    chunk_count INTEGER NOT NULL DEFAULT 0,
    embedder TEXT,
    embedder_status TEXT,
    UNIQUE (document_id, seq)
);
CREATE INDEX IF NOT EXISTS idx_revisions_hash ON memory_revisions(content_hash);

CREATE TABLE IF NOT EXISTS memory_chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    revision_id INTEGER NOT NULL REFERENCES memory_revisions(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    heading_path TEXT NOT NULL,
    start_char INTEGER NOT NULL,
    end_char INTEGER NOT NULL,
    start_byte INTEGER NOT NULL,
    end_byte INTEGER NOT NULL,
    overlap_chars INTEGER NOT NULL DEFAULT 0,
    text TEXT NOT NULL,
    chunk_hash TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    UNIQUE (revision_id, ordinal)
);

CREATE TABLE IF NOT EXISTS knowledge_nodes (
    -- AUTOINCREMENT: a node id is never reused, so a stale reference can't hit a new node
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    document_id INTEGER NOT NULL REFERENCES memory_documents(id) ON DELETE CASCADE,
    revision_id INTEGER NOT NULL REFERENCES memory_revisions(id),
    ordinal INTEGER NOT NULL,
    repository TEXT NOT NULL,
    logical_path TEXT NOT NULL,
    heading TEXT NOT NULL,
    text TEXT NOT NULL,
    doc_type TEXT,
    vector_space TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_nodes_document ON knowledge_nodes(document_id);

CREATE TABLE IF NOT EXISTS knowledge_node_memory_chunks (
    node_id INTEGER NOT NULL REFERENCES knowledge_nodes(id) ON DELETE CASCADE,
    chunk_id INTEGER NOT NULL REFERENCES memory_chunks(id),
    PRIMARY KEY (node_id, chunk_id)
);
CREATE INDEX IF NOT EXISTS idx_node_chunks_chunk ON knowledge_node_memory_chunks(chunk_id);

CREATE VIRTUAL TABLE IF NOT EXISTS knowledge_nodes_fts USING fts5(
    heading, text, logical_path,
    content='knowledge_nodes', content_rowid='id',
    tokenize='{FTS_TOKENIZER}'
);
CREATE TRIGGER IF NOT EXISTS knowledge_nodes_ai AFTER INSERT ON knowledge_nodes BEGIN
    INSERT INTO knowledge_nodes_fts(rowid, heading, text, logical_path)
    VALUES (new.id, new.heading, new.text, new.logical_path);
END;
CREATE TRIGGER IF NOT EXISTS knowledge_nodes_ad AFTER DELETE ON knowledge_nodes BEGIN
    INSERT INTO knowledge_nodes_fts(knowledge_nodes_fts, rowid, heading, text, logical_path)
    VALUES ('delete', old.id, old.heading, old.text, old.logical_path);
END;
CREATE TRIGGER IF NOT EXISTS knowledge_nodes_au AFTER UPDATE ON knowledge_nodes BEGIN
    INSERT INTO knowledge_nodes_fts(knowledge_nodes_fts, rowid, heading, text, logical_path)
    VALUES ('delete', old.id, old.heading, old.text, old.logical_path);
    INSERT INTO knowledge_nodes_fts(rowid, heading, text, logical_path)
    VALUES (new.id, new.heading, new.text, new.logical_path);
END;

-- One row per embedding model ever used; each has its own vec0 table so the
-- vectors of two models are never mixed.
CREATE TABLE IF NOT EXISTS vector_spaces (
    name TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL UNIQUE,
    dim INTEGER NOT NULL,
    metric TEXT NOT NULL,
    created_at REAL NOT NULL
);

CREATE TABLE IF NOT EXISTS embedding_cache (
    chunk_hash TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    vector BLOB NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (chunk_hash, fingerprint)
) WITHOUT ROWID;
"""

# v2: the revision timeline is read newest first per document.
_SCHEMA_V2 = """
CREATE INDEX IF NOT EXISTS idx_revisions_document ON memory_revisions(document_id, seq);
"""

# v3: lookups by logical path alone (`memlens history PATH` without --repository) and
# per-vector-space node counts (doctor, embedder switch).
_SCHEMA_V3 = """
CREATE INDEX IF NOT EXISTS idx_documents_path ON memory_documents(logical_path);
CREATE INDEX IF NOT EXISTS idx_nodes_space ON knowledge_nodes(vector_space);
"""

# v4: the embedding cache becomes a rowid table. As WITHOUT ROWID, each 1-1.5 KB vector
# overflowed into its own page (~4.7 KB per row; 44% of a 100k-chunk database).
_SCHEMA_V4 = """
CREATE TABLE embedding_cache_v4 (
    id INTEGER PRIMARY KEY,
    chunk_hash TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    vector BLOB NOT NULL,
    created_at REAL NOT NULL,
    UNIQUE (chunk_hash, fingerprint)
);
INSERT INTO embedding_cache_v4(chunk_hash, fingerprint, vector, created_at)
    SELECT chunk_hash, fingerprint, vector, created_at FROM embedding_cache;
DROP TABLE embedding_cache;
ALTER TABLE embedding_cache_v4 RENAME TO embedding_cache;
"""

# v5: chunker settings chosen by a rechunk, remembered per document, per repository or
# for all documents (owner: chunker_choice.py); why each chunk exists (its reason).
_SCHEMA_V5 = """
CREATE TABLE chunker_choices (
    scope TEXT NOT NULL CHECK (scope IN ('document', 'repository', 'all')),
    key TEXT NOT NULL,
    config TEXT NOT NULL,
    set_at REAL NOT NULL,
    PRIMARY KEY (scope, key)
);
ALTER TABLE memory_chunks ADD COLUMN reason TEXT NOT NULL DEFAULT '';
"""

# v6: the last searches people made (owner: search_history.py), for recall in the TUI
# and for replaying them against a proposed rechunk.
_SCHEMA_V6 = """
CREATE TABLE search_history (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    query TEXT NOT NULL,
    mode TEXT NOT NULL,
    source TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX idx_search_history_at ON search_history(at);
"""


def _packed(table: str, column: str, *, not_null: bool = False,
            deflate: str = "memlens_deflate", clear: str | None = None) -> str:
    """SQL that moves ``table.column`` into a zlib-compressed ``<column>_z`` blob and makes
    ``column`` a VIRTUAL generated column reading it back (readers see the same text).

    ``clear`` (v8 on): the old column is set to it by the same UPDATE, so each row shrinks
    instead of holding both copies until the DROP (rows that grow split their pages, and
    an upgraded file then stays ~15 % larger until a VACUUM)."""
    also = f", {column} = {clear}" if clear else ""
    return f"""
ALTER TABLE {table} ADD COLUMN {column}_z BLOB;
UPDATE {table} SET {column}_z = {deflate}({column}){also};
ALTER TABLE {table} DROP COLUMN {column};
ALTER TABLE {table} ADD COLUMN {column} TEXT
    GENERATED ALWAYS AS (memlens_inflate({column}_z)) VIRTUAL;
""" + (f"""CREATE TRIGGER {table}_{column}_z_nn BEFORE INSERT ON {table}
    WHEN new.{column}_z IS NULL BEGIN
    SELECT RAISE(ABORT, 'NOT NULL constraint failed: {table}.{column}');
END;
""" if not_null else "")



# v7: a smaller database (issue 17). The Markdown held by documents, revision snapshots
# and chunks is stored zlib-compressed in ``*_z`` blobs; the old column names are VIRTUAL
# generated columns (``memlens_inflate``, registered on every connection by
# memlens.core.store.db), so readers see the same text. Node text stayed plain (v8 packs it).
# Writers set the ``*_z`` column (memlens.core.store.db.pack_text). The embedding cache refers
# to the live node whose vec0 row holds its vector (``node_id``) instead of holding a
# second copy; ``vector`` is kept only while no live node holds it (the projection moves
# a vector back into the cache row before deleting that node).
_SCHEMA_V7 = (
    _packed("memory_documents", "content")
    + _packed("memory_revisions", "snapshot")
    + _packed("memory_chunks", "text", not_null=True)
    + """
CREATE TABLE embedding_cache_v7 (
    id INTEGER PRIMARY KEY,
    chunk_hash TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    node_id INTEGER,
    vector BLOB,
    created_at REAL NOT NULL,
    UNIQUE (chunk_hash, fingerprint),
    CHECK (vector IS NOT NULL OR node_id IS NOT NULL)
);
INSERT INTO embedding_cache_v7(chunk_hash, fingerprint, node_id, vector, created_at)
    SELECT chunk_hash, fingerprint, NULL, vector, created_at FROM embedding_cache;
DROP TABLE embedding_cache;
ALTER TABLE embedding_cache_v7 RENAME TO embedding_cache;
UPDATE embedding_cache SET node_id = n.id, vector = NULL FROM (
    SELECT MIN(k.id) AS id, s.fingerprint AS fp, memlens_sha256(k.text) AS h
    FROM knowledge_nodes k JOIN vector_spaces s ON s.name = k.vector_space GROUP BY fp, h) n
    WHERE n.fp = embedding_cache.fingerprint AND n.h = embedding_cache.chunk_hash;
CREATE INDEX idx_embedding_cache_node ON embedding_cache(node_id) WHERE node_id IS NOT NULL;
""")

_FTS_TRIGGERS = """
CREATE TRIGGER knowledge_nodes_ai AFTER INSERT ON knowledge_nodes BEGIN
    INSERT INTO knowledge_nodes_fts(rowid, heading, text, logical_path)
    VALUES (new.id, new.heading, new.text, new.logical_path);
END;
CREATE TRIGGER knowledge_nodes_ad AFTER DELETE ON knowledge_nodes BEGIN
    INSERT INTO knowledge_nodes_fts(knowledge_nodes_fts, rowid, heading, text, logical_path)
    VALUES ('delete', old.id, old.heading, old.text, old.logical_path);
END;
CREATE TRIGGER knowledge_nodes_au AFTER UPDATE ON knowledge_nodes BEGIN
    INSERT INTO knowledge_nodes_fts(knowledge_nodes_fts, rowid, heading, text, logical_path)
    VALUES ('delete', old.id, old.heading, old.text, old.logical_path);
    INSERT INTO knowledge_nodes_fts(rowid, heading, text, logical_path)
    VALUES (new.id, new.heading, new.text, new.logical_path);
END;
"""

# v8: smaller still (issue 17). Node text is stored compressed too (``text_z``; ``text``
# reads it back, so the FTS index's external content and every reader see the same text).
# The FTS triggers name ``text``, so they are dropped while the column is rebuilt (the
# index itself is untouched: the text is the same) and made again.
# A document's current content is its current revision's snapshot: ``content`` is no
# longer a column of memory_documents. ``content_z`` keeps only what no snapshot holds:
# the last content of a tombstoned document (the delete revision has no snapshot). On the
# upgrade a live document's copy is dropped only where it equals its current snapshot.
# Readers use :data:`DOC_CONTENT_SQL`.
# Smaller rows: a revision's chunker config (the same ~160-byte JSON in nearly every row)
# is compressed against a preset dictionary (memlens.core.store.db.pack_config, ~16 bytes); a
# chunk's SHA-256 is kept as 32 bytes (``chunk_sha256``; ``chunk_hash`` reads it back as
# hex; memlens_unhex refuses anything that is not a SHA-256, so no hash is lost). The
# index on content hashes of revisions had no query; the documents' one is replaced by
# one on the repository alone (what its look-ups use).
_SCHEMA_V8 = (
    "DROP TRIGGER knowledge_nodes_ai; DROP TRIGGER knowledge_nodes_ad;"
    " DROP TRIGGER knowledge_nodes_au;\n"
    + _packed("knowledge_nodes", "text", not_null=True, clear="''")
    + _FTS_TRIGGERS
    + """
UPDATE memory_documents SET content_z = NULL
    WHERE tombstoned_at IS NULL AND content_z IS NOT NULL
    AND memlens_inflate(content_z) IS (SELECT r.snapshot FROM memory_revisions r
                                       WHERE r.id = memory_documents.current_revision_id);
ALTER TABLE memory_documents DROP COLUMN content;
"""
    + _packed("memory_revisions", "chunker_config", deflate="memlens_deflate_config",
              clear="NULL")
    + """
ALTER TABLE memory_chunks ADD COLUMN chunk_sha256 BLOB;
UPDATE memory_chunks SET chunk_sha256 = memlens_unhex(chunk_hash), chunk_hash = '';
ALTER TABLE memory_chunks DROP COLUMN chunk_hash;
ALTER TABLE memory_chunks ADD COLUMN chunk_hash TEXT
    GENERATED ALWAYS AS (lower(hex(chunk_sha256))) VIRTUAL;
CREATE TRIGGER memory_chunks_chunk_sha256_nn BEFORE INSERT ON memory_chunks
    WHEN new.chunk_sha256 IS NULL BEGIN
    SELECT RAISE(ABORT, 'NOT NULL constraint failed: memory_chunks.chunk_hash');
END;
DROP INDEX idx_revisions_hash;
DROP INDEX idx_documents_hash;
CREATE INDEX idx_documents_repository ON memory_documents(repository);
""")

PACKED_COLUMNS: tuple[tuple[str, str], ...] = (
    ("memory_documents", "content"), ("memory_revisions", "snapshot"),
    ("memory_chunks", "text"), ("knowledge_nodes", "text"))
"""Every ``(table, column)`` stored zlib-compressed in ``<column>_z`` (schema v8): a grep of
the file cannot see their text, so privacy checks read them decompressed."""

DOC_CONTENT_SQL = (
    "memlens_inflate(COALESCE(d.content_z, (SELECT r.snapshot_z FROM memory_revisions r"
    " WHERE r.id=d.current_revision_id)))")
"""The content of document ``d`` (a ``memory_documents`` alias) in SQL, schema v8: its
current revision's snapshot, or for a tombstoned document the content it had last."""

# v9: two-stage projection (issue 37). A document's nodes and FTS rows (stage 1) swap in as
# soon as it is chunked; its vectors (stage 2) follow in slices. ``vector_total`` is how many
# of its active nodes are to have a vector (all of them, up to the per-document cap of
# ``[projection] max_vectors_per_document`` fresh embeddings), ``vector_done`` how many have
# one; ``vector_capped`` how many nodes the cap left without one. A failing embedder is
# recorded in ``vector_error`` / ``vector_attempts`` / ``vector_next_attempt_at`` (back-off)
# while the nodes stay lexically searchable. Before v9 every node had its vector: total and
# done are the node count. The partial index finds the documents whose vectors wait.
_SCHEMA_V9 = """
ALTER TABLE memory_documents ADD COLUMN vector_total INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memory_documents ADD COLUMN vector_done INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memory_documents ADD COLUMN vector_capped INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memory_documents ADD COLUMN vector_updated_at REAL;
ALTER TABLE memory_documents ADD COLUMN vector_error TEXT;
ALTER TABLE memory_documents ADD COLUMN vector_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memory_documents ADD COLUMN vector_next_attempt_at REAL;
UPDATE memory_documents SET vector_total = k.n, vector_done = k.n FROM (
    SELECT document_id, COUNT(*) AS n FROM knowledge_nodes GROUP BY document_id) k
    WHERE k.document_id = memory_documents.id;
CREATE INDEX idx_documents_vectors_waiting ON memory_documents(vector_total - vector_done)
    WHERE vector_done < vector_total;
"""

MIGRATIONS: list[str] = [_SCHEMA_V1, _SCHEMA_V2, _SCHEMA_V3, _SCHEMA_V4, _SCHEMA_V5, _SCHEMA_V6,
                         _SCHEMA_V7, _SCHEMA_V8, _SCHEMA_V9]
