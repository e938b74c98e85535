//! Data-driven trials of the importers over the real transcripts in `SCRIPTORIUM_TEST_DATA`
//! (claude-code-log, codemie-code, pi-mono, agent-history), each imported into a real
//! [`EmbeddedStore`] in a temporary directory.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use scriptorium_session_dag::import::{self, Format, Input, Summary};
use scriptorium_session_dag::{
    EmbeddedStore, MetadataBatch, Node, NodeId, NodeKind, SessionId, SessionStore,
};
use scriptorium_testkit::{Failed, Trial, data_trial, fail};

type Res = Result<(), Failed>;

fn ensure(cond: bool, msg: impl FnOnce() -> String) -> Res {
    if cond { Ok(()) } else { Err(Failed::from(msg())) }
}

fn fresh() -> Result<(tempfile::TempDir, EmbeddedStore), Failed> {
    let dir = tempfile::tempdir().map_err(fail)?;
    let store = EmbeddedStore::open(dir.path().join("sessions")).map_err(fail)?;
    Ok((dir, store))
}

/// Discovers and imports `paths`, failing on any error.
fn import(store: &EmbeddedStore, format: Format, paths: &[PathBuf]) -> Result<Summary, Failed> {
    let (units, errors) = import::discover(format, paths);
    if let Some(err) = errors.first() {
        return Err(fail(err));
    }
    let mut summary = Summary::default();
    for unit in &units {
        summary.merge(import::import_unit(store, unit).map_err(fail)?);
    }
    Ok(summary)
}

/// Every live node of a session: the union of the branches of all tips.
fn all_nodes(store: &EmbeddedStore, session: &SessionId) -> Result<BTreeMap<NodeId, Node>, Failed> {
    let mut out = BTreeMap::new();
    for tip in store.tips(session).map_err(fail)? {
        for node in store.branch(session, Some(&tip)).map_err(fail)? {
            out.insert(node.id.clone(), node);
        }
    }
    Ok(out)
}

fn session(id: &str) -> SessionId {
    SessionId(id.to_owned())
}

/// Every real transcript imports without a bad line, and every session is a connected set of
/// branches whose nodes all have their parent in the store.
fn every_real_file_imports(data: &Path) -> Res {
    for (format, dir) in REAL {
        // The synthetic files reuse the same uuids across files: give each its own store.
        let (units, errors) = import::discover(format, &[data.join(dir)]);
        ensure(errors.is_empty(), || format!("{dir}: {errors:?}"))?;
        ensure(!units.is_empty(), || format!("{dir}: no transcript found"))?;
        for unit in &units {
            let (_tmp, store) = fresh()?;
            let summary = import::import_unit(&store, unit).map_err(fail)?;
            let name = unit.first_path().display().to_string();
            ensure(summary.report.bad_lines.is_empty(), || {
                format!("{name}: bad lines {:?}", summary.report.bad_lines)
            })?;
            let empty = unit.len_bytes() == 0;
            ensure(empty == summary.sessions.is_empty(), || format!("{name}: {summary:?}"))?;
            for s in &summary.sessions {
                ensure(s.nodes > 0 && s.new_nodes == s.nodes, || format!("{name}: {s:?}"))?;
                let nodes = all_nodes(&store, &s.session)?;
                ensure(nodes.len() == s.nodes, || {
                    format!("{name}: {} nodes on branches, {} imported", nodes.len(), s.nodes)
                })?;
                for node in nodes.values() {
                    ensure(!node.content.is_empty() || node.kind != NodeKind::Message, || {
                        format!("{name}: empty message {}", node.id)
                    })?;
                    ensure(node.speaker.is_some() || node.kind == NodeKind::ToolResult, || {
                        format!("{name}: node {} has no speaker", node.id)
                    })?;
                }
                let stored = store.session(&s.session).map_err(fail)?;
                ensure(stored.as_ref().is_some_and(|x| x.head.is_some()), || {
                    format!("{name}: no head")
                })?;
            }
            // Re-importing the same unit changes nothing.
            let again = import::import_unit(&store, unit).map_err(fail)?;
            ensure(again.new_nodes() == 0, || format!("{name}: re-import appended nodes"))?;
        }
    }
    Ok(())
}

/// Where each format's real transcripts are.
const REAL: [(Format, &str); 8] = [
    (Format::ClaudeCode, "claude-code-log/real_projects"),
    (Format::ClaudeCode, "claude-code-log/synthetic"),
    (Format::ClaudeCode, "codemie-code/claude"),
    (Format::Codex, "codemie-code/codex"),
    (Format::Pi, "pi-mono"),
    (Format::ClaudeCode, "agent-history/real_sessions/claude"),
    (Format::Codex, "agent-history/real_sessions/codex"),
    (Format::Pi, "agent-history/real_sessions/pi"),
];

/// The `*.jsonl` files under `dir`, recursively, sorted.
fn jsonl_files(dir: &Path) -> Result<Vec<PathBuf>, Failed> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(fail)? {
        let path = entry.map_err(fail)?.path();
        if path.is_dir() {
            out.extend(jsonl_files(&path)?);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// Every real transcript is detected as its true format from its first lines (the empty
/// Claude Code file as empty), both from its whole content and from what `read_head` reads;
/// `discover_auto` over every data set at once gives each file its format, and the explicit
/// `discover` of each data set refuses nothing.
fn every_real_file_is_detected_as_its_format(data: &Path) -> Res {
    let mut want: BTreeMap<PathBuf, Format> = BTreeMap::new();
    let mut files = 0;
    for (format, dir) in REAL {
        for path in jsonl_files(&data.join(dir))? {
            files += 1;
            let bytes = std::fs::read(&path).map_err(fail)?;
            let head = import::read_head(bytes.as_slice()).map_err(fail)?;
            let expected = if bytes.is_empty() {
                import::Detection::Empty
            } else {
                import::Detection::Format(format)
            };
            for (what, got) in [("whole", import::detect(&bytes)), ("head", import::detect(&head))]
            {
                ensure(got == expected, || format!("{} ({what}): {got:?}", path.display()))?;
            }
            if !bytes.is_empty() {
                want.insert(path, format);
            }
        }
        let (_, errors) = import::discover(format, &[data.join(dir)]);
        ensure(errors.is_empty(), || format!("{dir} as {format}: {errors:?}"))?;
    }
    ensure(files >= 23, || format!("only {files} transcripts found"))?;
    let dirs: Vec<PathBuf> = REAL.iter().map(|(_, dir)| data.join(dir)).collect();
    let found = import::discover_auto(&dirs);
    ensure(found.errors.is_empty(), || format!("{:?}", found.errors))?;
    ensure(found.empty.len() == 1, || format!("empty: {:?}", found.empty))?;
    let got: BTreeMap<PathBuf, Format> = found
        .units
        .iter()
        .flat_map(|u| u.files.iter().map(move |f| (f.path.clone(), u.format)))
        .collect();
    ensure(got == want, || format!("auto: {got:?}\nwant: {want:?}"))
}

/// The user-edit fork of `-experiments-ideas`: two branches sharing a prefix.
fn user_edit_fork_has_two_branches(data: &Path) -> Res {
    let (_tmp, store) = fresh()?;
    let dir = data.join("claude-code-log/real_projects/-experiments-ideas");
    let summary = import(&store, Format::ClaudeCode, &[dir])?;
    let id = session("03eb5929-52b3-4b13-ada3-b93ae35806b8");
    ensure(summary.sessions.len() == 1 && summary.sessions[0].session == id, || {
        format!("{summary:?}")
    })?;
    let tips = store.tips(&id).map_err(fail)?;
    ensure(tips.len() == 2, || format!("tips: {tips:?}"))?;
    let a = store.branch(&id, Some(&tips[0])).map_err(fail)?;
    let b = store.branch(&id, Some(&tips[1])).map_err(fail)?;
    let shared = a.iter().zip(&b).take_while(|(x, y)| x.id == y.id).count();
    ensure(shared > 0 && shared < a.len() && shared < b.len(), || {
        format!("shared prefix {shared} of {} and {}", a.len(), b.len())
    })?;
    // The two edited user messages start the two branches after the shared prefix.
    let starts: BTreeSet<&str> = [&a[shared], &b[shared]]
        .iter()
        .map(|n| n.content.get(..20).unwrap_or(&n.content))
        .collect();
    let want: BTreeSet<&str> =
        ["I very much like thi", "I actually don't lik"].into_iter().collect();
    ensure(starts == want, || format!("branch starts: {starts:?}"))?;
    ensure(a.iter().chain(&b).all(|n| n.kind != NodeKind::Message || !n.content.is_empty()), || {
        "empty message".to_owned()
    })
}

/// The compaction file yields exactly one compaction summary, attached to the pre-compaction
/// conversation through `logicalParentUuid`, so the session keeps a single root.
fn compaction_summary_node(data: &Path) -> Res {
    let (_tmp, store) = fresh()?;
    let file = data.join("codemie-code/claude/session-624a4a58.jsonl");
    import(&store, Format::ClaudeCode, &[file])?;
    let id = session("624a4a58-b34c-462d-a70d-13421c8125a8");
    let nodes = all_nodes(&store, &id)?;
    let summaries: Vec<&Node> =
        nodes.values().filter(|n| n.kind == NodeKind::CompactionSummary).collect();
    ensure(summaries.len() == 1, || format!("{} compaction summaries", summaries.len()))?;
    let summary = summaries[0];
    ensure(summary.content.contains("This session is being continued"), || {
        format!("summary content: {:.80}", summary.content)
    })?;
    ensure(summary.metadata.get("compact_trigger").map(String::as_str) == Some("auto"), || {
        format!("{:?}", summary.metadata)
    })?;
    let parent = summary.parent.as_ref().ok_or_else(|| fail("the summary is a root"))?;
    ensure(nodes.contains_key(parent), || format!("parent {parent} not on a branch"))?;
    let roots: Vec<&NodeId> =
        nodes.values().filter(|n| n.parent.is_none()).map(|n| &n.id).collect();
    ensure(roots.len() == 1, || format!("roots: {roots:?}"))
}

/// The old-layout sidechain `agent-c8d9b115.jsonl` joins its session and hangs off the `Task`
/// tool call that spawned it.
fn sidechain_attaches_to_parent_session(data: &Path) -> Res {
    let (_tmp, store) = fresh()?;
    let dir = data.join("claude-code-log/real_projects/-src-deep-manifest");
    let summary = import(&store, Format::ClaudeCode, &[dir])?;
    ensure(summary.sessions.len() == 1, || format!("{summary:?}"))?;
    let id = session("a7da6a22-facc-4fcd-8bab-f83c87862004");
    let nodes = all_nodes(&store, &id)?;
    let agent: Vec<&Node> = nodes
        .values()
        .filter(|n| n.metadata.get("agent_id").map(String::as_str) == Some("c8d9b115"))
        .collect();
    ensure(agent.len() > 10, || format!("{} agent nodes", agent.len()))?;
    let root = nodes
        .get(&NodeId("99b87859-70ca-4070-af96-daeb4f88bdbd".to_owned()))
        .ok_or_else(|| fail("agent root missing"))?;
    ensure(
        root.metadata.get("spawned_by_tool_call").map(String::as_str)
            == Some("toolu_01MmDqMXjZLvzbNFLGH2ZA3k"),
        || format!("{:?}", root.metadata),
    )?;
    let call = root.parent.as_ref().and_then(|p| nodes.get(p)).ok_or_else(|| fail("no parent"))?;
    ensure(call.kind == NodeKind::ToolCall && call.content.starts_with("Task "), || {
        format!("agent root parent: {:?} {:.40}", call.kind, call.content)
    })?;
    // The head is on the main conversation, not in the sidechain.
    let head = store.session(&id).map_err(fail)?.and_then(|s| s.head);
    let head = head.and_then(|h| nodes.get(&h)).ok_or_else(|| fail("no head"))?;
    ensure(!head.metadata.contains_key("is_sidechain"), || "head in the sidechain".to_owned())?;
    let tips = store.tips(&id).map_err(fail)?;
    ensure(tips.len() >= 2, || format!("tips {tips:?}"))
}

/// The synthetic DAG files keep every `parentUuid` link across `sessionId` changes.
fn synthetic_dags_keep_parent_links(data: &Path) -> Res {
    for (name, tips) in
        [("dag_simple", 1), ("dag_resume", 1), ("dag_fork", 2), ("dag_within_fork", 2)]
    {
        let (_tmp, store) = fresh()?;
        let path = data.join(format!("claude-code-log/synthetic/{name}.jsonl"));
        let bytes = std::fs::read(&path).map_err(fail)?;
        import(&store, Format::ClaudeCode, std::slice::from_ref(&path))?;
        let id = session("s1");
        let mut links = 0;
        for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let v: serde_json::Value = serde_json::from_slice(line).map_err(fail)?;
            let uuid = v["uuid"].as_str().ok_or_else(|| fail("no uuid"))?;
            let node = store.node(&id, &NodeId(uuid.to_owned())).map_err(fail)?;
            let node = node.ok_or_else(|| fail(format!("{name}: {uuid} missing")))?;
            let want = v["parentUuid"].as_str().map(|p| NodeId(p.to_owned()));
            ensure(node.parent == want, || format!("{name}: {uuid} parent {:?}", node.parent))?;
            if let Some(sid) = v["sessionId"].as_str().filter(|s| *s != "s1") {
                ensure(
                    node.metadata.get("source_session_id").map(String::as_str) == Some(sid),
                    || format!("{name}: {uuid} {:?}", node.metadata),
                )?;
            }
            links += usize::from(want.is_some());
        }
        ensure(links > 3, || format!("{name}: {links} links"))?;
        let got = store.tips(&id).map_err(fail)?.len();
        ensure(got == tips, || format!("{name}: {got} tips, want {tips}"))?;
    }
    Ok(())
}

/// `sidechain_main.jsonl` names parents that are not in the file; with the agent file parsed as
/// its sidechain, the agent's root hangs off the `Task` call.
fn sidechain_dangling_parents(data: &Path) -> Res {
    let dir = data.join("claude-code-log/synthetic");
    let main_path = dir.join("sidechain_main.jsonl");
    let agent_path = dir.join("sidechain_agent.jsonl");
    let main = std::fs::read(&main_path).map_err(fail)?;
    let agent = std::fs::read(&agent_path).map_err(fail)?;
    let mut side = Input::new(&agent_path, &agent);
    side.sidechain = true;
    let parsed =
        import::parse(Format::ClaudeCode, &[Input::new(&main_path, &main), side]).map_err(fail)?;
    ensure(parsed.sessions.len() == 1, || format!("{} sessions", parsed.sessions.len()))?;
    let s = &parsed.sessions[0];
    let get = |id: &str| s.nodes.iter().find(|n| n.id.as_str() == id);
    let first = get("83a7cabd-3642-45d6-ba73-9b9f843b9ab1").ok_or_else(|| fail("main root"))?;
    ensure(first.parent.is_none(), || "dangling parent kept".to_owned())?;
    ensure(
        first.metadata.get("missing_parent").map(String::as_str)
            == Some("8ae40e91-fa63-40a9-969d-70c0c1d6175e"),
        || format!("{:?}", first.metadata),
    )?;
    let root = get("b674eedd-0d9d-49e7-8116-1f092cd750ed").ok_or_else(|| fail("agent root"))?;
    ensure(root.parent.as_ref().map(NodeId::as_str) == Some(first.id.as_str()), || {
        format!("agent root parent {:?}", root.parent)
    })?;
    let orphan = get("4899826e-499f-4f24-ae6e-f2ac31cddfd4").ok_or_else(|| fail("orphan"))?;
    ensure(orphan.parent.is_none() && orphan.metadata.contains_key("missing_parent"), || {
        format!("{orphan:?}")
    })?;
    // And through the store, each file on its own.
    let (_tmp, store) = fresh()?;
    let summary = import(&store, Format::ClaudeCode, &[main_path, agent_path])?;
    ensure(summary.report.bad_lines.is_empty(), || format!("{:?}", summary.report))
}

/// The real empty session file: no session, no error.
fn empty_file(data: &Path) -> Res {
    let (_tmp, store) = fresh()?;
    let file = data.join(
        "claude-code-log/real_projects/-Users-dain-workspace-JSSoundRecorder/2c5941bd-b9de-41d6-9414-221d175776f7.jsonl",
    );
    let summary = import(&store, Format::ClaudeCode, &[file])?;
    ensure(summary.sessions.is_empty() && summary.report.lines == 0, || format!("{summary:?}"))?;
    let listed = store.list_sessions(scriptorium_session_dag::Page { offset: 0, limit: 10 });
    ensure(listed.map_err(fail)?.is_empty(), || "a session was created".to_owned())
}

/// turn-1 then turn-2 gives exactly the nodes of turn-2 alone; re-importing changes nothing; a
/// node marked between the imports keeps its mark.
fn incremental_turns(data: &Path) -> Res {
    let dir = data.join("codemie-code/claude/incremental-simple");
    let (t1, t2) = (dir.join("turn-1.jsonl"), dir.join("turn-2.jsonl"));
    let id = session("3fb74381-1bf4-475e-8c6f-442d872b1bcf");
    let (_a, grown) = fresh()?;
    let first = import(&grown, Format::ClaudeCode, std::slice::from_ref(&t1))?;
    let marked = grown.session(&id).map_err(fail)?.and_then(|s| s.head);
    let marked = marked.ok_or_else(|| fail("no head after turn-1"))?;
    let mut batch = MetadataBatch::new();
    batch.insert(
        marked.clone(),
        [("memory_written_scriptorium".to_owned(), "w-test".to_owned())].into(),
    );
    grown.merge_metadata(&id, &batch).map_err(fail)?;
    let second = import(&grown, Format::ClaudeCode, std::slice::from_ref(&t2))?;
    let (_b, direct) = fresh()?;
    let only = import(&direct, Format::ClaudeCode, std::slice::from_ref(&t2))?;
    ensure(first.new_nodes() + second.new_nodes() == only.new_nodes(), || {
        format!("{} + {} != {}", first.new_nodes(), second.new_nodes(), only.new_nodes())
    })?;
    // The two captures are two files: `source_file` names each (a real growing file keeps its
    // path); everything else must be identical.
    let without_file = |mut nodes: BTreeMap<NodeId, Node>| {
        for node in nodes.values_mut() {
            node.metadata.remove("source_file");
        }
        nodes
    };
    let mut a = without_file(all_nodes(&grown, &id)?);
    let b = without_file(all_nodes(&direct, &id)?);
    let mark = a.get_mut(&marked).and_then(|n| n.metadata.remove("memory_written_scriptorium"));
    ensure(mark.as_deref() == Some("w-test"), || "the mark was lost".to_owned())?;
    ensure(a.len() == b.len(), || format!("{} nodes, want {}", a.len(), b.len()))?;
    for (id, node) in &b {
        ensure(a.get(id) == Some(node), || format!("node {id}: {:?} != {node:?}", a.get(id)))?;
    }
    let head = |s: &EmbeddedStore| s.session(&id).map(|x| x.and_then(|x| x.head));
    ensure(head(&grown).map_err(fail)? == head(&direct).map_err(fail)?, || "heads".to_owned())?;
    // Re-importing either file changes nothing, the head included.
    let before = grown.session(&id).map_err(fail)?;
    for file in [&t2, &t1, &t2] {
        let again = import(&grown, Format::ClaudeCode, std::slice::from_ref(file))?;
        ensure(again.new_nodes() == 0, || format!("{} appended", file.display()))?;
    }
    ensure(grown.session(&id).map_err(fail)? == before, || "session changed".to_owned())?;
    let node = grown.node(&id, &marked).map_err(fail)?.ok_or_else(|| fail("marked node"))?;
    ensure(node.metadata.contains_key("memory_written_scriptorium"), || "mark lost".to_owned())
}

/// Codex and pi files give one linear branch each, of the expected lengths.
fn linear_formats(data: &Path) -> Res {
    let cases: [(Format, &str, &str, usize); 6] = [
        (
            Format::Codex,
            "codemie-code/codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
            "019e1625-789d-76c0-80ab-3724b5ddb799",
            // Its developer message (`<permissions instructions>`) is no turn (issue 34).
            223,
        ),
        (
            Format::Codex,
            "codemie-code/codex/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl",
            "019e1695-0522-7c83-8b39-0dd379793f80",
            82,
        ),
        (
            Format::Codex,
            "agent-history/real_sessions/codex/session-01.jsonl",
            "019e9625-802f-7e91-840a-cfe88d14117a",
            3,
        ),
        (
            Format::Pi,
            "pi-mono/before-compaction.jsonl",
            "ffae836b-9420-4060-ac13-7745215f90ff",
            1215,
        ),
        (Format::Pi, "pi-mono/large-session.jsonl", "d703a1a9-1b7b-4fb1-b512-c9738b1fe617", 1096),
        (
            Format::Pi,
            "agent-history/real_sessions/pi/session-01.jsonl",
            "019e963d-6bd6-7ade-8a49-256ac3391bdd",
            2,
        ),
    ];
    for (format, file, sid, len) in cases {
        let (_tmp, store) = fresh()?;
        import(&store, format, &[data.join(file)])?;
        let id = session(sid);
        let tips = store.tips(&id).map_err(fail)?;
        ensure(tips.len() == 1, || format!("{file}: {} tips", tips.len()))?;
        let branch = store.branch(&id, None).map_err(fail)?;
        ensure(branch.len() == len, || format!("{file}: branch of {}, want {len}", branch.len()))?;
        let users = branch.iter().filter(|n| n.kind == NodeKind::Message).count();
        ensure(users > 0, || format!("{file}: no message"))?;
    }
    // The pi compaction entries and the cross-file fork.
    let (_tmp, store) = fresh()?;
    import(&store, Format::Pi, &[data.join("pi-mono/before-compaction.jsonl")])?;
    let id = session("ffae836b-9420-4060-ac13-7745215f90ff");
    let branch = store.branch(&id, None).map_err(fail)?;
    let compactions = branch.iter().filter(|n| n.kind == NodeKind::CompactionSummary).count();
    ensure(compactions == 2, || format!("{compactions} compactions"))?;
    ensure(
        branch[0].metadata.get("branched_from_session").map(String::as_str)
            == Some("d97339c6-6c10-4827-846b-9ff1d9c3dc37"),
        || format!("{:?}", branch[0].metadata),
    )?;
    // The v3 session's title comes from `session_info`.
    let (_tmp, store) = fresh()?;
    let summary = import(&store, Format::Pi, &[data.join("agent-history/real_sessions/pi")])?;
    let title = summary.sessions.first().and_then(|s| s.title.clone());
    ensure(title.as_deref() == Some("agent-history pi smoke"), || format!("title {title:?}"))
}

/// The trials of this area.
/// A session's `updated_at` after an import is the transcript's own last time (the newest
/// `created_at` of its nodes), never the time of the import, sidechains and head moves included.
fn updated_at_is_the_transcripts_own_time(data: &Path) -> Res {
    for dir in scriptorium_testkit::REAL_TRANSCRIPTS {
        let (_dir, store) = fresh()?;
        let found = import::discover_auto(&[data.join(dir)]);
        for unit in &found.units {
            import::import_unit(&store, unit).map_err(fail)?;
        }
        for session in store
            .list_sessions(scriptorium_session_dag::Page { offset: 0, limit: usize::MAX })
            .map_err(fail)?
        {
            let newest = all_nodes(&store, &session.id)?.values().map(|n| n.created_at).max();
            ensure(Some(session.updated_at) == newest, || {
                format!(
                    "{dir}: {} updated at {:?}, newest node {newest:?}",
                    session.id.0, session.updated_at
                )
            })?;
        }
    }
    Ok(())
}

pub(crate) fn trials() -> Vec<Trial> {
    vec![
        data_trial("import::every_real_file_imports", every_real_file_imports),
        data_trial(
            "import::updated_at_is_the_transcripts_own_time",
            updated_at_is_the_transcripts_own_time,
        ),
        data_trial(
            "import::every_real_file_is_detected_as_its_format",
            every_real_file_is_detected_as_its_format,
        ),
        data_trial("import::user_edit_fork_has_two_branches", user_edit_fork_has_two_branches),
        data_trial("import::compaction_summary_node", compaction_summary_node),
        data_trial(
            "import::sidechain_attaches_to_parent_session",
            sidechain_attaches_to_parent_session,
        ),
        data_trial("import::synthetic_dags_keep_parent_links", synthetic_dags_keep_parent_links),
        data_trial("import::sidechain_dangling_parents", sidechain_dangling_parents),
        data_trial("import::empty_file", empty_file),
        data_trial("import::incremental_turns", incremental_turns),
        data_trial("import::linear_formats", linear_formats),
    ]
}
