-- Scriptorium session store, schema version 2: forgetting.
--
-- Nodes stay append-only but for one change, a forget: the content becomes empty, the speaker
-- NULL, and the metadata only the written markers (`memory_written_scriptorium` and the
-- per-workspace `memory_written_scriptorium:<workspace id>`) plus `forgotten = "1"`. Every
-- other column keeps its value (id, parent, role, kind, created_at, seq refuse any change,
-- rewound only ever goes from false to true). A session's title was never guarded: a forget
-- sets it to NULL like `set_title` does.
--
-- The guard on `speaker` and `content` moves from the immutable trigger to its own, which lets
-- exactly a forget through: it looks at the row as the UPDATE leaves it (`NEW`), so an UPDATE
-- that names `content` or `speaker` passes only when the result is a forgotten node.

CREATE FUNCTION scriptorium_forget_only() RETURNS trigger AS $$
BEGIN
    IF NEW.content = ''::bytea
       AND NEW.speaker IS NULL
       AND json_typeof(NEW.metadata::json) = 'object'
       AND (NEW.metadata::json ->> 'forgotten') IS NOT DISTINCT FROM '1'
       AND NOT EXISTS (
           SELECT 1 FROM json_object_keys(NEW.metadata::json) AS k(key)
           WHERE k.key <> 'forgotten'
             AND k.key <> 'memory_written_scriptorium'
             -- `left`, not LIKE: `_` is a LIKE wildcard.
             AND left(k.key, 27) <> 'memory_written_scriptorium:')
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'session nodes are append-only: % refused', TG_ARGV[0];
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER nodes_immutable ON nodes;
CREATE TRIGGER nodes_immutable
    BEFORE UPDATE OF sid, nid, seq, parent, role, kind, created_at ON nodes
    FOR EACH ROW EXECUTE FUNCTION scriptorium_refuse('a change of an immutable column');
CREATE TRIGGER nodes_forget_only BEFORE UPDATE OF speaker, content ON nodes
    FOR EACH ROW EXECUTE FUNCTION scriptorium_forget_only('a change of content or speaker but a forget');
