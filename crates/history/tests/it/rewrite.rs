//! Forgetting content in the whole history: `History::rewrite` and `History::prune`, read back
//! with the real `git` CLI (`cat-file --batch-all-objects`, `fsck`, `log`, `status`).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::process::Command;

use scriptorium_history::{ErrorCode, History, Scrub, Scrubbed, prune_repository};

use crate::support::{Ws, at, commit};

/// What is forgotten wherever it appears.
const PHRASE: &str = "passport 4711-ZX";
/// What it is replaced by.
const REPLACEMENT: &str = "[forgotten]";
/// An archived conversation forgotten whole: the scrub removes the file.
const FORGOTTEN_ARCHIVE: &str = "sources/import/_v2/dana-call.md";
/// Words only that archive holds.
const ARCHIVE_WORDS: &str = "BLUE-HERON";

/// The scrub the tests forget with; it counts what it is asked, by (path, bytes).
#[derive(Default)]
struct Forget {
    calls: RefCell<HashMap<(String, Vec<u8>), usize>>,
}

impl Forget {
    fn calls(&self) -> usize {
        self.calls.borrow().values().sum()
    }
}

impl Scrub for Forget {
    fn blob(&self, path: &str, bytes: &[u8]) -> Scrubbed {
        *self.calls.borrow_mut().entry((path.to_owned(), bytes.to_vec())).or_default() += 1;
        if path == FORGOTTEN_ARCHIVE {
            return Scrubbed::Remove;
        }
        let text = String::from_utf8_lossy(bytes);
        if text.contains(PHRASE) {
            Scrubbed::Replace(text.replace(PHRASE, REPLACEMENT).into_bytes())
        } else {
            Scrubbed::Keep
        }
    }

    fn message(&self, message: &str) -> Option<String> {
        message.contains(PHRASE).then(|| message.replace(PHRASE, REPLACEMENT))
    }
}

/// The index (0 = the initial commit) of the first commit that holds forgotten content.
const FIRST_AFFECTED: usize = 5;

/// A history of 20 commits made as the product makes them (topics, an archive under `sources/`,
/// views), the phrase in some blobs of some commits and in one message, and a forgotten
/// archive; with `forget`, a 21st commit: the forget transaction, which scrubbed the live files.
fn build(ws: &Ws, forget: bool) -> History {
    let history = ws.open();
    let mut n = 0;
    let mut step = |message: &str, files: &[(&str, &str)]| {
        n += 1;
        for (path, text) in files {
            ws.write(path, text);
        }
        let changed: Vec<&str> = files.iter().map(|(path, _)| *path).collect();
        commit(&history, &format!("t-{n:02}"), message, Some(&changed), at(n));
    };
    let garden = |k: u32| format!("# Garden\n\nTomatoes, row {k}. ^b0000001\n");
    let dana = |extra: &str| format!("# Dana\n\nDana moved to Lyon. ^b0000002\n{extra}");
    let frame = |k: u32, text: &str| format!("--- frame {k}\n{text}\n");
    let archive1 = frame(1, "Dana: hello");
    let archive2 = format!("{archive1}{}", frame(2, &format!("Dana: my {PHRASE} expires in May")));
    let archive3 = format!("{archive2}{}", frame(3, "Dana: see you"));
    let call1 = format!("# Call\n\nthe words were {ARCHIVE_WORDS}\n");
    let call2 = format!("{call1}and then we hung up\n");
    let dana_passport = format!("\nHer {PHRASE} is in the drawer. ^b0000003\n");

    step("memory: garden", &[("topics/projects/garden.md", &garden(1)), ("core.md", "garden\n")]);
    step(
        "memory: dana",
        &[("topics/people/dana.md", &dana("")), ("timeline/2024-01-02.md", "- Dana moved\n")],
    );
    step("memory: archive", &[("sources/chat/_v2/s1.md", &archive1)]);
    step("memory: garden 2", &[("topics/projects/garden.md", &garden(2))]);
    // The first commit with the phrase (index 5).
    step(
        "memory: passport",
        &[
            ("sources/chat/_v2/s1.md", &archive2),
            ("topics/people/dana.md", &dana(&dana_passport)),
            ("core.md", &format!("garden\nDana's {PHRASE}\n")),
        ],
    );
    step("memory: garden 3", &[("topics/projects/garden.md", &garden(3))]);
    step(&format!("memory: note the {PHRASE}"), &[("timeline/2024-01-03.md", "- a note\n")]);
    step("memory: import the call", &[(FORGOTTEN_ARCHIVE, &call1)]);
    step(
        "memory: dana 2",
        &[(
            "topics/people/dana.md",
            &dana(&format!("{dana_passport}\nShe likes tea. ^b0000004\n")),
        )],
    );
    step("memory: garden 4", &[("topics/projects/garden.md", &garden(4))]);
    step("memory: archive 3", &[("sources/chat/_v2/s1.md", &archive3)]);
    step("memory: timeline", &[("timeline/2024-01-04.md", "- tea\n")]);
    step("memory: garden 5", &[("topics/projects/garden.md", &garden(5))]);
    step("memory: the call goes on", &[(FORGOTTEN_ARCHIVE, &call2)]);
    step(
        "memory: dana 3",
        &[(
            "topics/people/dana.md",
            &dana(&format!("{dana_passport}\nShe likes coffee. ^b0000004\n")),
        )],
    );
    step("memory: garden 6", &[("topics/projects/garden.md", &garden(6))]);
    step("memory: core", &[("core.md", &format!("garden\nDana's {PHRASE}\nDana likes coffee\n"))]);
    step("memory: house", &[("topics/projects/house.md", "# House\n\nA roof. ^b0000005\n")]);
    step("memory: garden 7", &[("topics/projects/garden.md", &garden(7))]);
    if forget {
        let changed = scrub_live(ws);
        let changed: Vec<&str> = changed.iter().map(String::as_str).collect();
        commit(&history, "t-forget", "memory: forget", Some(&changed), at(21));
    }
    history
}

/// What the forget transaction does to the live files: the phrase replaced, the forgotten
/// archive removed. Returns the paths it changed.
fn scrub_live(ws: &Ws) -> Vec<String> {
    let mut changed = Vec::new();
    for path in live_files(ws) {
        let text = std::fs::read_to_string(ws.path(&path)).expect("read live file");
        if text.contains(PHRASE) {
            ws.write(&path, &text.replace(PHRASE, REPLACEMENT));
            changed.push(path);
        }
    }
    ws.remove("sources/import");
    changed.push(FORGOTTEN_ARCHIVE.to_owned());
    changed
}

/// Every workspace file but git's and the runtime's, sorted.
fn live_files(ws: &Ws) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![ws.root().to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir") {
            let entry = entry.expect("dir entry");
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == ".git" || name.starts_with(".scriptorium") {
                continue;
            }
            if entry.file_type().expect("file type").is_dir() {
                dirs.push(entry.path());
            } else {
                let rel =
                    entry.path().strip_prefix(ws.root()).expect("in the workspace").to_owned();
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

/// A copy of the whole workspace, repository included.
fn copy_of(ws: &Ws) -> Ws {
    let copy = Ws::new();
    let status = Command::new("cp")
        .arg("-a")
        .arg(ws.root().join("."))
        .arg(copy.root())
        .status()
        .expect("run cp");
    assert!(status.success());
    copy
}

/// Every object in the repository, as `git cat-file --batch-all-objects --batch` prints them.
fn all_objects(ws: &Ws) -> Vec<u8> {
    let out = ws.git_output(&["cat-file", "--batch-all-objects", "--batch"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The commits of `HEAD`, oldest first: id, author and committer time, whole message.
fn log(ws: &Ws) -> Vec<(String, String, String, String)> {
    let text = ws.git(&["log", "--reverse", "--format=%H%x1f%at%x1f%ct%x1f%B%x1e"]);
    text.split('\x1e')
        .map(|record| record.trim_start_matches('\n'))
        .filter(|record| !record.is_empty())
        .map(|record| {
            let fields: Vec<&str> = record.split('\x1f').collect();
            (fields[0].into(), fields[1].into(), fields[2].into(), fields[3].into())
        })
        .collect()
}

/// Every (path, blob id) of every commit any ref reaches.
fn history_blobs(ws: &Ws) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for commit in ws.git_lines(&["rev-list", "--all"]) {
        for line in ws.git_lines(&["ls-tree", "-r", &commit]) {
            let (meta, path) = line.split_once('\t').expect("ls-tree line");
            let blob = meta.split(' ').nth(2).expect("blob id");
            out.insert((path.to_owned(), blob.to_owned()));
        }
    }
    out
}

/// The refs and what they name, `HEAD`, the settled marker, the index's entries and the status:
/// what a finished rewrite leaves.
fn snapshot(ws: &Ws) -> Vec<String> {
    let mut out = ws.git_lines(&["for-each-ref", "--format=%(refname) %(objectname)"]);
    out.push(ws.git(&["rev-parse", "HEAD"]));
    out.push(std::fs::read_to_string(ws.path(".git/scriptorium-settled")).expect("marker"));
    out.extend(ws.git_lines(&["ls-files", "-s"]));
    out.push(ws.git(&["status", "--porcelain"]));
    out
}

fn no_known() -> BTreeMap<String, String> {
    BTreeMap::new()
}

#[test]
fn forgetting_rewrites_every_commit_that_held_it_and_prune_leaves_no_trace() {
    let ws = Ws::new();
    let history = build(&ws, true);
    // A transaction that changed only internal files: settled by the marker, no commit.
    let settled = commit(&history, "t-settled", "memory: nothing to commit", Some(&[]), at(22));
    assert!(!settled.created);
    let before = log(&ws);
    assert_eq!(before.len(), 21);
    // A fetched remote branch at an affected commit, and everything packed (refs too), as a
    // `git gc` by hand leaves it.
    ws.git(&["update-ref", "refs/scriptorium/remote/main", &before[8].0]);
    ws.git(&["gc", "--quiet"]);
    let forgotten: BTreeSet<String> = history_blobs(&ws)
        .into_iter()
        .filter(|(path, blob)| {
            path == FORGOTTEN_ARCHIVE || ws.git(&["cat-file", "blob", blob]).contains(PHRASE)
        })
        .map(|(_, blob)| blob)
        .collect();
    assert!(contains(&all_objects(&ws), PHRASE) && contains(&all_objects(&ws), ARCHIVE_WORDS));

    let rewritten = history.rewrite(&Forget::default(), &no_known()).expect("rewrite");

    let after = log(&ws);
    assert_eq!(after.len(), before.len(), "the same number of commits");
    for (i, (old, new)) in before.iter().zip(&after).enumerate() {
        assert_eq!((&old.1, &old.2), (&new.1, &new.2), "commit {i} keeps its times");
        assert_eq!(new.3, old.3.replace(PHRASE, REPLACEMENT), "commit {i}'s message, scrubbed");
        assert_eq!(old.0 == new.0, i < FIRST_AFFECTED, "commit {i} is rewritten iff affected");
    }
    let expected: Vec<(String, String)> = before
        .iter()
        .zip(&after)
        .skip(FIRST_AFFECTED)
        .map(|(o, n)| (o.0.clone(), n.0.clone()))
        .collect();
    assert_eq!(rewritten.map, expected, "the map, parents first");
    assert_eq!(rewritten.head.as_deref(), Some(after[20].0.as_str()));
    assert_eq!(rewritten.blobs, forgotten.len());
    assert_eq!(
        ws.git(&["rev-parse", "refs/scriptorium/remote/main"]).trim(),
        after[8].0,
        "every ref moves to the rewritten commit"
    );
    // Until the prune, the old objects are still there.
    assert!(contains(&all_objects(&ws), PHRASE));
    // What a hand-made merge and fetch leave behind, naming old commits.
    std::fs::write(ws.path(".git/ORIG_HEAD"), format!("{}\n", before[20].0)).expect("ORIG_HEAD");
    std::fs::write(ws.path(".git/FETCH_HEAD"), format!("{}\t\tbranch 'main'\n", before[20].0))
        .expect("FETCH_HEAD");

    let remaining = history.prune().expect("prune");
    let objects = all_objects(&ws);
    assert!(!contains(&objects, PHRASE), "the phrase is gone from every object");
    assert!(!contains(&objects, ARCHIVE_WORDS), "the forgotten archive is gone");
    let listed = ws.git_lines(&["cat-file", "--batch-all-objects", "--batch-check"]);
    assert_eq!(remaining, listed.len());
    for gone in ["ORIG_HEAD", "FETCH_HEAD", "logs"] {
        assert!(!ws.path(&format!(".git/{gone}")).exists(), "{gone}");
    }
    ws.assert_clean();
    // HEAD's tree is the live files, byte for byte.
    assert_eq!(ws.tree_files(), live_files(&ws));
    for path in live_files(&ws) {
        let committed = ws.git_output(&["cat-file", "blob", &format!("HEAD:{path}")]).stdout;
        assert_eq!(committed, std::fs::read(ws.path(&path)).expect("live file"), "{path}");
    }
    // The history needs no repair: the marker names the new HEAD with the last transaction.
    let marker = std::fs::read_to_string(ws.path(".git/scriptorium-settled")).expect("marker");
    assert_eq!(marker, format!("t-settled {}\n", after[20].0));
    assert_eq!(history.last_txn_id().expect("txn").as_deref(), Some("t-settled"));
    assert!(History::settled(ws.root(), "t-settled").is_some());
    // And a second prune has nothing left to remove.
    assert_eq!(history.prune().expect("prune again"), remaining);
}

#[test]
fn the_same_rewrite_gives_the_same_ids_and_a_second_rewrite_changes_nothing() {
    let (a, b) = (Ws::new(), Ws::new());
    let (history_a, history_b) = (build(&a, false), build(&b, false));
    // The live files forgotten, not yet committed: the rewrite changes HEAD's tree itself.
    scrub_live(&a);
    scrub_live(&b);
    let first_a = history_a.rewrite(&Forget::default(), &no_known()).expect("rewrite a");
    let first_b = history_b.rewrite(&Forget::default(), &no_known()).expect("rewrite b");
    assert_eq!(first_a, first_b, "identical histories give identical ids");
    assert_eq!(first_a.map.len(), 20 - FIRST_AFFECTED);
    assert_eq!(a.git(&["rev-parse", "HEAD"]), b.git(&["rev-parse", "HEAD"]));
    // The index follows the new tree.
    a.assert_clean();

    let state = snapshot(&a);
    let index = std::fs::read(a.path(".git/index")).expect("index");
    let second = history_a.rewrite(&Forget::default(), &no_known()).expect("rewrite again");
    assert_eq!(second, scriptorium_history::Rewritten::default(), "nothing changes");
    assert_eq!(snapshot(&a), state);
    assert_eq!(std::fs::read(a.path(".git/index")).expect("index"), index, "index untouched");
}

#[test]
fn a_clone_maps_what_another_clone_rewrote_and_rewrites_only_its_own_commits() {
    let a = Ws::new();
    let history_a = build(&a, true);
    // Clone B: A's repository before the rewrite, plus one commit of its own.
    let b = copy_of(&a);
    let history_b = History::open_or_init(b.root(), at(0)).expect("open b");
    b.write("topics/people/tea.md", "# Tea\n\nDana likes tea. ^b0000006\n");
    commit(&history_b, "t-b1", "memory: tea", Some(&["topics/people/tea.md"]), at(30));
    let plain = copy_of(&b);

    let map_a = history_a.rewrite(&Forget::default(), &no_known()).expect("rewrite a").map;
    let known: BTreeMap<String, String> = map_a.iter().cloned().collect();
    let a_head = a.git(&["rev-parse", "HEAD"]).trim().to_owned();
    // A's new commits arrive by fetch.
    let root_a = a.root().display().to_string();
    assert_eq!(history_b.fetch(&root_a, "main").expect("fetch"), Some(a_head.clone()));

    let scrub = Forget::default();
    let rewritten = history_b.rewrite(&scrub, &known).expect("rewrite b");
    assert_eq!(rewritten.map.len(), 1, "only B's own commit: {:?}", rewritten.map);
    assert_eq!(b.git(&["rev-parse", "HEAD^"]).trim(), a_head, "built on A's rewritten head");
    assert_eq!(
        b.git_lines(&["rev-list", "HEAD^"]),
        a.git_lines(&["rev-list", "HEAD"]),
        "B shares A's rewritten commits"
    );
    // A's trees told B what its scrub would say: only B's new blob was asked about.
    assert_eq!(
        scrub.calls(),
        1,
        "{:?}",
        scrub.calls.borrow().keys().map(|k| &k.0).collect::<Vec<_>>()
    );

    history_b.prune().expect("prune b");
    assert!(!contains(&all_objects(&b), PHRASE));
    b.assert_clean();

    // The map is only a shortcut: B rewriting everything itself ends on the same commit.
    let alone = History::open_or_init(plain.root(), at(0)).expect("open copy");
    alone.rewrite(&Forget::default(), &no_known()).expect("rewrite alone");
    assert_eq!(plain.git(&["rev-parse", "HEAD"]), b.git(&["rev-parse", "HEAD"]));
}

#[test]
fn a_map_naming_a_commit_that_was_not_fetched_is_refused() {
    let a = Ws::new();
    let history_a = build(&a, true);
    let b = copy_of(&a);
    let history_b = History::open_or_init(b.root(), at(0)).expect("open b");
    let known: BTreeMap<String, String> = history_a
        .rewrite(&Forget::default(), &no_known())
        .expect("rewrite a")
        .map
        .into_iter()
        .collect();
    let refs = snapshot(&b);

    let err = history_b.rewrite(&Forget::default(), &known).expect_err("A's commits are not here");
    assert_eq!(err.code(), ErrorCode::RevisionNotFound, "{err}");
    let head_a = a.git(&["rev-parse", "HEAD"]);
    assert!(err.to_string().contains(head_a.trim()), "names the missing commit: {err}");
    assert_eq!(snapshot(&b), refs, "nothing moved");
}

#[test]
fn objects_a_fetch_brought_in_a_pack_are_pruned_too() {
    let a = Ws::new();
    build(&a, true);
    let c = Ws::new();
    let history_c = c.open();
    history_c.fetch(&a.root().display().to_string(), "main").expect("fetch");
    let packs = std::fs::read_dir(c.path(".git/objects/pack")).expect("pack dir").count();
    assert!(packs > 0, "the fetch brought a pack");
    assert!(c.git(&["count-objects", "-v"]).contains("in-pack: "));
    assert!(contains(&all_objects(&c), PHRASE));

    let rewritten = history_c.rewrite(&Forget::default(), &no_known()).expect("rewrite");
    assert!(rewritten.head.is_none(), "C's own branch held nothing to forget");
    history_c.prune().expect("prune");
    let objects = all_objects(&c);
    assert!(!contains(&objects, PHRASE) && !contains(&objects, ARCHIVE_WORDS));
    c.assert_clean();
    assert_eq!(
        c.git_lines(&["log", "--format=%s", "refs/scriptorium/remote/main"]).len(),
        21,
        "the fetched history, rewritten"
    );
}

#[test]
fn a_bare_remote_is_pruned_by_path() {
    let a = Ws::new();
    let history = build(&a, true);
    let remote = Ws::new();
    remote.git(&["init", "--quiet", "--bare"]);
    let url = remote.root().display().to_string();
    let head = history.head_commit().expect("head").expect("a commit");
    history.push(&url, &head, "main").expect("push");
    assert!(contains(&all_objects(&remote), PHRASE));

    let rewritten = history.rewrite(&Forget::default(), &no_known()).expect("rewrite");
    let new_head = rewritten.head.expect("HEAD rewritten");
    // How the rewritten branch replaces the old one on the remote is the caller's (a forced
    // push); here, by hand.
    a.git(&["push", "--quiet", "--force", &url, &format!("{new_head}:refs/heads/main")]);
    let remaining = prune_repository(remote.root()).expect("prune the remote");

    let objects = all_objects(&remote);
    assert!(!contains(&objects, PHRASE) && !contains(&objects, ARCHIVE_WORDS));
    assert_eq!(
        remaining,
        remote.git_lines(&["cat-file", "--batch-all-objects", "--batch-check"]).len()
    );
    let fsck = remote.git_output(&["fsck", "--full", "--strict"]);
    assert!(fsck.status.success(), "{}", String::from_utf8_lossy(&fsck.stderr));
    assert_eq!(remote.git(&["rev-parse", "main"]).trim(), new_head);
}

#[test]
fn each_distinct_blob_is_scrubbed_once() {
    let ws = Ws::new();
    let history = build(&ws, true);
    let pairs = history_blobs(&ws);
    let commits = ws.git_lines(&["rev-list", "--all"]).len();
    let files = ws.tree_files().len();

    let scrub = Forget::default();
    history.rewrite(&scrub, &no_known()).expect("rewrite");
    let calls = scrub.calls.borrow();
    assert!(calls.values().all(|n| *n == 1), "a blob scrubbed twice: {calls:?}");
    assert_eq!(calls.len(), pairs.len(), "every distinct (path, blob) once");
    assert!(calls.len() < commits * files / 2, "{} calls for {commits} commits", calls.len());
}

#[test]
fn a_rewrite_interrupted_between_ref_moves_finishes_when_run_again() {
    let pristine = Ws::new();
    build(&pristine, true);
    let commits = log(&pristine);
    // Refs besides the branch: a fetched branch, a lightweight and an annotated tag (whose
    // message holds the phrase too), all at affected commits.
    pristine.git(&["update-ref", "refs/scriptorium/remote/main", &commits[8].0]);
    pristine.git(&["tag", "before-forget", &commits[12].0]);
    let tagger = ["-c", "user.name=T", "-c", "user.email=t@example.invalid"];
    let message = format!("noted: {PHRASE}");
    let mut args = tagger.to_vec();
    args.extend(["tag", "-a", "noted", "-m", &message, &commits[10].0]);
    pristine.git(&args);

    let whole = copy_of(&pristine);
    let whole_history = History::open_or_init(whole.root(), at(0)).expect("open");
    let old_refs = whole_history.refs().expect("refs");
    assert_eq!(old_refs.len(), 4, "{old_refs:?}");
    let map = whole_history.rewrite(&Forget::default(), &no_known()).expect("rewrite").map;
    let expected = snapshot(&whole);
    assert!(!whole.git(&["cat-file", "tag", "noted"]).contains(PHRASE), "the tag is scrubbed");
    whole.assert_clean();

    let moves = 4;
    for stop in 0..=moves {
        let ws = copy_of(&pristine);
        let history = History::open_or_init(ws.root(), at(0)).expect("open");
        let refs_before = ws.git_lines(&["for-each-ref", "--format=%(refname) %(objectname)"]);
        let plan = history.plan_rewrite(&Forget::default(), &no_known()).expect("plan");
        assert_eq!(plan.outcome().map.len(), 21 - FIRST_AFFECTED);
        plan.apply_interrupted(stop).expect("apply part");
        let refs_now = ws.git_lines(&["for-each-ref", "--format=%(refname) %(objectname)"]);
        let moved = refs_before.iter().filter(|line| !refs_now.contains(line)).count();
        assert_eq!(moved, stop, "{stop} refs moved before the crash");
        if stop < moves {
            // The branch moves last: once it names the new history, every ref does.
            assert_eq!(ws.git(&["rev-parse", "HEAD"]), pristine.git(&["rev-parse", "HEAD"]));
        }

        // Run again as it is: it finishes, though its map lacks what the moved refs alone
        // reached. Or (a copy) put the old refs back first: the map is the whole map again.
        let restarted = copy_of(&ws);
        history.rewrite(&Forget::default(), &no_known()).expect("rewrite again");
        assert_eq!(snapshot(&ws), expected, "stopped after {stop} ref moves");
        history.prune().expect("prune");
        assert!(!contains(&all_objects(&ws), PHRASE), "stopped after {stop} ref moves");
        ws.assert_clean();

        let history = History::open_or_init(restarted.root(), at(0)).expect("open");
        history.set_refs(&old_refs).expect("set refs");
        assert_eq!(history.refs().expect("refs"), old_refs);
        let again = history.rewrite(&Forget::default(), &no_known()).expect("rewrite again");
        assert_eq!(again.map, map, "stopped after {stop} ref moves, refs put back");
        assert_eq!(snapshot(&restarted), expected, "stopped after {stop} ref moves, refs put back");
    }
    // After the prune, the old refs' commits are gone: they cannot be put back.
    whole_history.prune().expect("prune");
    let err = whole_history.set_refs(&old_refs).expect_err("pruned");
    assert_eq!(err.code(), ErrorCode::RevisionNotFound, "{err}");
}

#[test]
fn a_dry_run_counts_what_the_rewrite_changes_and_writes_nothing() {
    let ws = Ws::new();
    let history = build(&ws, false);
    scrub_live(&ws);
    let objects = ws.git(&["cat-file", "--batch-all-objects", "--batch-check"]);
    let state = snapshot(&ws);
    let dry = history.rewrite_dry_run(&Forget::default()).expect("dry run");
    assert_eq!(dry.map.len(), 20 - FIRST_AFFECTED, "every commit that holds the phrase");
    assert!(dry.blobs > 0);
    let after = ws.git(&["cat-file", "--batch-all-objects", "--batch-check"]);
    assert!(after == objects, "no object written");
    assert_eq!(snapshot(&ws), state, "no ref moved");
    let done = history.rewrite(&Forget::default(), &no_known()).expect("rewrite");
    assert_eq!(dry.map, done.map, "the dry run names the commits the rewrite makes");
    assert_eq!(dry.blobs, done.blobs);
}
