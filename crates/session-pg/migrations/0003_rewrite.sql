-- Scriptorium session store, schema version 3: rewriting texts.
--
-- A rewrite of texts (`SessionStore::rewrite_texts`: a redaction of what was stored before
-- redaction existed) replaces the content of nodes in place, and nothing else of them. The
-- guard on `content` and `speaker` (version 2: only a forget passes) lets it through too when
-- the transaction declared itself a rewrite (`SET LOCAL scriptorium.rewrite_texts = 'on'`), the
-- speaker stays, and the old content is not empty: a forgotten node's content never comes back,
-- a declared rewrite of it meets the forget-only guard as before. The declaration is no access
-- control (a role that may update the table may declare it, as it may drop the trigger): like
-- the triggers themselves, it keeps an UPDATE written by mistake from changing content.

DROP TRIGGER nodes_forget_only ON nodes;
CREATE TRIGGER nodes_forget_or_rewrite BEFORE UPDATE OF speaker, content ON nodes
    FOR EACH ROW
    WHEN (NOT (current_setting('scriptorium.rewrite_texts', true) IS NOT DISTINCT FROM 'on'
               AND OLD.content <> ''::bytea
               AND NEW.speaker IS NOT DISTINCT FROM OLD.speaker))
    EXECUTE FUNCTION scriptorium_forget_only(
        'a change of content or speaker but a forget or a declared rewrite');
