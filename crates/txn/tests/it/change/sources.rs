//! Sources declared by an update request (see `docs/format.md#change-api-source-ids`): archived
//! with the caller's provenance, substituted for their labels, and the append-only rule of paired
//! writers. Every rejection goes through [`refused_with`], which
//! checks that the workspace and its revision are unchanged byte for byte.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use scriptorium_topics_format::source::id::{ApiProvenance, ApiSource, api_source_ids};
use scriptorium_topics_format::source::{AuthorityTier, SourceId, TrustState, scan};
use scriptorium_txn::{ErrorCode, LockTimeout, RealFs, UpdateContext, Workspace};
use serde_json::{Value, json};

use super::{live, refused_with, update_with};
use crate::pipeline::{fixture, options, records, tree_state};

const DANA: &str = "topics/people/dana.md";
const NO_AUTHORITY: &str = "creating a source requires complete persisted authority";
const REWRITE: &str =
    "paired memory updates may create or append, but cannot rewrite existing content";

fn owner() -> ApiProvenance {
    ApiProvenance {
        principal_id: "owner-1".into(),
        speaker_kind: "owner".into(),
        speaker_id: "owner-1".into(),
        authority_tier: "owner".into(),
        origin_id: "owner-rest/memory-changes".into(),
    }
}

fn with(provenance: ApiProvenance) -> UpdateContext {
    UpdateContext { provenance: Some(provenance), ..UpdateContext::default() }
}

fn tea() -> Value {
    json!([{"label": "new-source-tea", "role": "user", "content": "I like green tea.",
            "observed_at": "2024-04-02T09:30:00Z"}])
}

/// The link a topic directly under `topics/` writes for the source `id`.
fn link(id: &str) -> String {
    let id = SourceId::parse(id).expect("source id");
    format!("../{}#{}", id.v2_path(), id.anchor())
}

/// A new topic citing `source` (a label or an ID).
fn note(source: &str) -> String {
    format!(
        "# Drinks\n\nDana likes green tea.[^t]\n\n\
         [^t]: Time: `2024-04-02`; Sources: [tea]({source})\n"
    )
}

fn write_note(sources: Value, source: &str) -> Value {
    json!({"sources": sources, "changes": [
        {"path": "topics/drinks.md", "action": "write", "content": note(source)},
    ]})
}

#[test]
fn a_created_record_cites_an_archived_trusted_source() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let outcome = update_with(
        &ws,
        json!({"sources": tea(), "memory_changes": [
            {"op": "create_record", "content": "Dana likes green tea.", "time": "2024-04-02",
             "sources": [{"source": "new-source-tea", "label": "tea chat"}],
             "destination": {"topic_path": DANA, "headings": ["Dana"], "position": "end"}},
        ]}),
        with(owner()),
    )
    .expect("installed");
    let expected = api_source_ids(
        &owner(),
        &[ApiSource {
            role: "user".into(),
            content: "I like green tea.".into(),
            observed_at: Some("2024-04-02T09:30:00+00:00".into()),
        }],
    );
    let id = expected[0].as_str().to_owned();
    assert_eq!(outcome.source_ids, BTreeMap::from([("new-source-tea".to_owned(), id.clone())]));
    assert!(id.starts_with("claude-code/"), "{id}");
    let path = expected[0].v2_path();
    let link = format!("Sources: [tea chat](../../{path}#{})", expected[0].anchor());
    assert!(live(root, DANA).contains(&link), "{}", live(root, DANA));
    assert!(outcome.installed.covered.contains(&id));

    let text = live(root, &path);
    let archive = scan(&path, &text);
    assert!(archive.complete);
    let frame = archive.frames.iter().find(|f| f.source_id == id).expect("framed");
    assert_eq!(frame.trust(), TrustState::Trusted);
    let meta = &frame.meta.as_ref().expect("meta").meta;
    assert_eq!(meta.principal_id, "owner-1");
    assert_eq!(meta.speaker_kind, "owner");
    assert_eq!(meta.authority_tier, Some(AuthorityTier::Owner));
    assert_eq!(frame.speaker_id().as_deref(), Some("owner-1"));
    assert!(frame.record.contains("[2024-04-02T09:30:00+00:00]"), "{}", frame.record);
    assert!(frame.record.contains("I like green tea."), "{}", frame.record);
}

#[test]
fn labels_are_substituted_in_changes_and_patches_longest_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let sources = json!([
        {"label": "new-source-a", "role": "user", "content": "A."},
        {"label": "new-source-a-b", "role": "assistant", "content": "AB."},
    ]);
    let outcome = update_with(
        &ws,
        json!({"sources": sources, "changes": [{"path": "topics/x.md", "action": "write",
            "content": "# X\n\nX holds.[^x]\n\n[^x]: Time: `2024`; Sources: \
                        [a](new-source-a), [ab](new-source-a-b)\n"}]}),
        with(owner()),
    )
    .expect("installed");
    let (a, ab) = (&outcome.source_ids["new-source-a"], &outcome.source_ids["new-source-a-b"]);
    assert_ne!(a, ab);
    assert!(live(root, "topics/x.md").contains(&format!("[a]({}), [ab]({})", link(a), link(ab))));

    let patch = "--- /dev/null\n+++ b/topics/y.md\n@@ -0,0 +1,5 @@\n+# Y\n+\n+Y holds.[^y]\n+\n\
                 +[^y]: Time: `2024`; Sources: [c](new-source-c)\n";
    let outcome = update_with(
        &ws,
        json!({"sources": [{"label": "new-source-c", "role": "tool", "content": "C."}],
               "patch": patch}),
        with(owner()),
    )
    .expect("installed");
    let c = &outcome.source_ids["new-source-c"];
    assert!(live(root, "topics/y.md").contains(&format!("[c]({})", link(c))));
}

#[test]
fn missing_or_incomplete_provenance_fails_closed_and_creates_no_sources() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = Workspace::init_with(root, options(Arc::new(RealFs), 7)).expect("init");
    let body = write_note(tea(), "new-source-tea");
    let incomplete = [
        ApiProvenance { principal_id: String::new(), ..owner() },
        ApiProvenance { origin_id: " ".into(), ..owner() },
        ApiProvenance { authority_tier: "unknown".into(), ..owner() },
    ];
    let contexts =
        std::iter::once(UpdateContext::default()).chain(incomplete.into_iter().map(with));
    for ctx in contexts {
        refused_with(
            root,
            &ws,
            body.clone(),
            ctx,
            ErrorCode::WriterPreconditionFailed,
            NO_AUTHORITY,
        );
        let archived = std::fs::read_dir(root.join("sources")).expect("sources/").count();
        assert_eq!(archived, 0, "a source was archived");
    }
    let error = ws
        .update(
            scriptorium_txn::UpdateRequest::from_json(
                &json!({"base_revision": ws.revision().expect("revision").as_str(),
                    "sources": tea(), "changes": []})
                .to_string(),
            )
            .expect("parsed"),
        )
        .expect_err("no provenance");
    assert_eq!(error.code(), ErrorCode::WriterPreconditionFailed);
}

#[test]
fn payload_identity_fields_are_refused_as_unknown_fields() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    for field in ["principal_id", "speaker_id", "authority_tier", "origin_id", "trust_state"] {
        let mut sources = tea();
        sources[0][field] = json!("forged");
        let body = write_note(sources, "new-source-tea");
        refused_with(root, &ws, body, with(owner()), ErrorCode::InvalidArgument, "unknown field");
    }
    let mut body = write_note(tea(), "new-source-tea");
    body["provenance"] = json!({"principal_id": "forged"});
    refused_with(root, &ws, body, with(owner()), ErrorCode::InvalidArgument, "unknown field");
}

/// The IDs the standard request mints in a fresh workspace under `ctx`.
fn ids_under(ctx: UpdateContext) -> BTreeMap<String, String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = fixture(dir.path());
    update_with(&ws, write_note(tea(), "new-source-tea"), ctx).expect("installed").source_ids
}

#[test]
fn identity_fields_and_only_they_change_the_ids() {
    let base = ids_under(with(owner()));
    assert_eq!(ids_under(with(owner())), base, "same inputs, same IDs");
    let renamed = UpdateContext { speaker_display: Some("Dana B.".into()), ..with(owner()) };
    assert_eq!(ids_under(renamed), base, "a display rename keeps the IDs");
    let changed = [
        ApiProvenance { principal_id: "owner-2".into(), ..owner() },
        ApiProvenance { speaker_kind: "human".into(), ..owner() },
        ApiProvenance { speaker_id: "owner-2".into(), ..owner() },
        ApiProvenance { authority_tier: "paired".into(), ..owner() },
        ApiProvenance { origin_id: "sess-1/turn-2".into(), ..owner() },
    ];
    for provenance in changed {
        let ids = ids_under(with(provenance.clone()));
        assert_ne!(ids["new-source-tea"], base["new-source-tea"], "{provenance:?}");
    }
}

#[test]
fn a_refused_update_archives_nothing_and_a_retry_mints_the_same_ids() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    // Refused while applying the form (after the append was planned).
    let mut conflicting = write_note(tea(), "new-source-tea");
    conflicting["changes"]
        .as_array_mut()
        .expect("changes")
        .push(json!({"path": "topics/missing.md", "action": "delete"}));
    refused_with(
        root,
        &ws,
        conflicting,
        with(owner()),
        ErrorCode::PatchConflict,
        "deletes a file that does not exist",
    );
    // Refused by validation, which resolved the new source through the planned frames.
    let broken = json!({"sources": tea(), "changes": [
        {"path": "topics/drinks.md", "action": "write",
         "content": format!("{}\nDana also likes coffee.[^zz]\n", note("new-source-tea"))},
    ]});
    refused_with(
        root,
        &ws,
        broken,
        with(owner()),
        ErrorCode::InvalidTopicFormat,
        "undefined footnote: zz",
    );
    // Refused by the compare-and-set.
    let mut stale = write_note(tea(), "new-source-tea");
    stale["base_revision"] = json!("r-stale");
    refused_with(root, &ws, stale, with(owner()), ErrorCode::ConcurrentUpdate, "r-stale");

    let sources_after = |root: &Path| -> Vec<(String, String)> {
        tree_state(root, true).into_iter().filter(|(p, _)| p.starts_with("sources/")).collect()
    };
    let before = sources_after(root);
    let outcome =
        update_with(&ws, write_note(tea(), "new-source-tea"), with(owner())).expect("install");
    assert_eq!(outcome.source_ids, ids_under(with(owner())));
    let archived = sources_after(root);
    assert_eq!(archived.len(), before.len() + 1, "one new archive file: {archived:?}");
    // The same source declared again (a retry after a lost reply) appends nothing.
    let again = json!({"sources": tea(), "changes": [
        {"path": "topics/drinks2.md", "action": "write", "content": note("new-source-tea")},
    ]});
    let retry = update_with(&ws, again, with(owner())).expect("retry");
    assert_eq!(retry.source_ids, outcome.source_ids);
    assert_eq!(sources_after(root), archived, "the retry archived nothing new");
}

#[test]
fn an_undeclared_label_is_missing_source() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let message = "patch references undeclared source label: new-source-other";
    let bodies = [
        write_note(tea(), "new-source-other"),
        json!({"sources": tea(), "patch": "--- /dev/null\n+++ b/topics/z.md\n@@ -0,0 +1,1 @@\n\
                                   +# Z new-source-other\n"}),
        json!({"sources": tea(), "memory_changes": [
            {"op": "create_record", "content": "Tea.", "time": "2024",
             "source_refs": ["new-source-other"],
             "destination": {"topic_path": DANA, "headings": ["Dana"], "position": "end"}},
        ]}),
    ];
    for body in bodies {
        refused_with(root, &ws, body, with(owner()), ErrorCode::MissingSource, message);
    }
    // Without any declared source (and without provenance) as well.
    let body = write_note(json!([]), "new-source-other");
    refused_with(root, &ws, body, UpdateContext::default(), ErrorCode::MissingSource, message);
}

#[test]
fn source_shapes_and_limits_are_invalid_arguments() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let item = |label: &str, role: &str, content: &str| json!({"label": label, "role": role, "content": content});
    let many: Vec<Value> = (0..65).map(|i| item(&format!("new-source-{i}"), "user", "x")).collect();
    let big = "x".repeat(128_001);
    let cases = [
        (json!(many), "at most 64 items"),
        (
            json!([item("new-source-a", "user", &big), item("new-source-b", "user", &big)]),
            "at most 256000 bytes",
        ),
        (json!([item("new-source-A", "user", "x")]), "label must match"),
        (json!([item("source-a", "user", "x")]), "label must match"),
        (json!([item("new-source-a", "robot", "x")]), "role must be one of"),
        (
            json!([item("new-source-a", "user", "x"), item("new-source-a", "tool", "y")]),
            "duplicate",
        ),
        (
            json!([{"label": "new-source-a", "role": "user", "content": "x",
                    "observed_at": "yesterday"}]),
            "observed_at must be an ISO-8601 timestamp",
        ),
        (json!([{"label": "new-source-a", "role": "user"}]), "missing field `content`"),
        (json!({"label": "new-source-a"}), "invalid type"),
    ];
    for (sources, message) in cases {
        let body = write_note(sources, "new-source-a");
        refused_with(root, &ws, body, with(owner()), ErrorCode::InvalidArgument, message);
    }
}

#[test]
fn new_evidence_is_limited_to_the_transaction() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    ws.archive_sources(&records(6..=6), LockTimeout::DEFAULT).expect("archive");
    refused_with(
        root,
        &ws,
        write_note(json!([]), "openprogram/garden/u6"),
        UpdateContext::default(),
        ErrorCode::SourceNotInTransaction,
        "openprogram/garden/u6",
    );
    // A memory change naming it explicitly declares it.
    update_with(
        &ws,
        json!({"memory_changes": [
            {"op": "create_record", "content": "Six.", "time": "2024",
             "source_refs": ["openprogram/garden/u6"],
             "destination": {"topic_path": DANA, "headings": ["Dana"], "position": "end"}},
        ]}),
        UpdateContext::default(),
    )
    .expect("installed");
}

#[test]
fn append_only_creates_and_appends_but_never_rewrites() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let ws = fixture(root);
    let paired = || UpdateContext {
        append_only: true,
        ..with(ApiProvenance { authority_tier: "paired".into(), ..owner() })
    };
    update_with(&ws, write_note(tea(), "new-source-tea"), paired()).expect("create");
    let old = live(root, "topics/drinks.md");
    let appended = format!(
        "{old}\nDana also likes coffee.[^c]\n\n[^c]: Time: `2024`; Sources: [tea](new-source-tea)\n"
    );
    update_with(
        &ws,
        json!({"sources": tea(), "changes": [
            {"path": "topics/drinks.md", "action": "write", "content": appended},
        ]}),
        paired(),
    )
    .expect("append");
    assert!(live(root, "topics/drinks.md").starts_with(&old));

    let rewrites = [
        json!({"changes": [{"path": DANA, "action": "write", "content": "# Dana\n"}]}),
        json!({"changes": [{"path": DANA, "action": "delete"}]}),
        json!({"memory_changes": [
            {"op": "create_record", "content": "Inserted.", "time": "2024",
             "source_refs": ["openprogram/garden/u1"],
             "destination": {"topic_path": DANA, "headings": ["Dana"], "position": "start"}},
        ]}),
    ];
    for body in rewrites {
        let error = refused_with(root, &ws, body, paired(), ErrorCode::AppendOnlyRequired, REWRITE);
        assert!(error.to_string().contains(DANA) || format!("{error:?}").contains(DANA));
    }
    // The same rewrite is fine for a writer that is not append-only.
    update_with(
        &ws,
        json!({"changes": [{"path": DANA, "action": "delete"}]}),
        UpdateContext::default(),
    )
    .expect("delete");
}
