-- Scriptorium session store, schema version 1.
--
-- IDs, content, titles and projects are BYTEA holding UTF-8: any Rust string (NUL included)
-- round-trips, which PostgreSQL's TEXT would refuse. `speaker` and `metadata` are JSON text
-- (serde_json escapes control characters, so the text never holds a NUL).

CREATE TABLE sessions (
    sid        BYTEA PRIMARY KEY,
    head       BYTEA,
    updated_at BIGINT NOT NULL DEFAULT 0,
    title      BYTEA,
    project    BYTEA,
    -- Nodes never leave a session, so the count is also the next node's `seq`.
    node_count BIGINT NOT NULL DEFAULT 0
);

-- `list_sessions`: newest first, ties by ID.
CREATE INDEX sessions_by_update ON sessions (updated_at DESC, sid);

CREATE TABLE nodes (
    sid        BYTEA NOT NULL REFERENCES sessions (sid),
    nid        BYTEA NOT NULL,
    -- Append order within the session (0, 1, 2, …).
    seq        BIGINT NOT NULL,
    parent     BYTEA,
    role       TEXT NOT NULL,
    kind       TEXT NOT NULL,
    speaker    TEXT,
    content    BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    metadata   TEXT NOT NULL DEFAULT '{}',
    rewound    BOOLEAN NOT NULL DEFAULT FALSE,
    -- `node`, and each step of the ancestor walk (`branch`, `walk_ancestors`).
    PRIMARY KEY (sid, nid),
    UNIQUE (sid, seq)
);

-- Which stored nodes name an ID as their parent (the cycle check at append).
CREATE INDEX nodes_by_parent ON nodes (sid, parent);

-- Append-only: a node is never deleted, and only its metadata and its rewound flag (false to
-- true) ever change. The triggers fire on the columns named in an UPDATE's SET list, so a
-- metadata merge pays for no comparison of content.
CREATE FUNCTION scriptorium_refuse() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'session nodes are append-only: % refused', TG_ARGV[0];
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER nodes_no_delete BEFORE DELETE ON nodes
    FOR EACH ROW EXECUTE FUNCTION scriptorium_refuse('delete');
CREATE TRIGGER nodes_immutable
    BEFORE UPDATE OF sid, nid, seq, parent, role, kind, speaker, content, created_at ON nodes
    FOR EACH ROW EXECUTE FUNCTION scriptorium_refuse('a change of an immutable column');
CREATE TRIGGER nodes_no_unrewind BEFORE UPDATE OF rewound ON nodes
    FOR EACH ROW WHEN (OLD.rewound AND NOT NEW.rewound)
    EXECUTE FUNCTION scriptorium_refuse('undoing a rewind');
