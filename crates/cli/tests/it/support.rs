//! Helpers for running the `scriptorium` binary in tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A home with an initialized workspace and the example archive (archived before any
/// transaction, as the runtime does).
pub(crate) fn home_with_sources() -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("a temp dir");
    let out = scriptorium(home.path(), &["init"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let archive = "sources/openprogram/_v2/garden-2024.md";
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/workspace");
    let target = home.path().join("memory").join(archive);
    std::fs::create_dir_all(target.parent().expect("parent")).expect("create sources");
    std::fs::copy(example.join(archive), target).expect("copy the archive");
    home
}

/// A topic file with one block citing the example archive's `u2`, as a person writes it.
pub(crate) const NOTE: &str = "# Garden\n\nDana is planning a vegetable garden.[^e1]\n\n\
[^e1]: Time: `2024-04-02`; Sources: [garden](openprogram/garden-2024/u2)\n";

/// [`home_with_sources`] whose memory holds [`NOTE`] as `topics/garden.md`, installed by
/// `scriptorium edit`.
pub(crate) fn home_with_note() -> tempfile::TempDir {
    let home = home_with_sources();
    let note = home.path().join("note.md");
    std::fs::write(&note, NOTE).expect("write the note");
    let out = scriptorium(
        home.path(),
        &["edit", "topics/garden.md", "--from", note.to_str().expect("utf-8")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    home
}

/// The paragraph of the core master [`add_core`] installs.
pub(crate) const CORE_FACT: &str = "Dana keeps a vegetable garden.";

/// Installs a core master (`topics/core.md`, one paragraph: [`CORE_FACT`]) with `scriptorium
/// edit`, in a home made by [`home_with_sources`].
pub(crate) fn add_core(home: &Path) {
    let core = home.join("core.md");
    let text = format!(
        "# Core\n\n{CORE_FACT}[^e1]\n\n\
         [^e1]: Time: `2024-04-02`; Sources: [garden](openprogram/garden-2024/u2)\n"
    );
    std::fs::write(&core, text).expect("write the core");
    let out =
        scriptorium(home, &["edit", "topics/core.md", "--from", core.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Installs `topics/<path>` with one paragraph, `text`, citing the example archive's `u2`
/// (`scriptorium edit`), in a home made by [`home_with_sources`].
pub(crate) fn add_topic(home: &Path, path: &str, text: &str) {
    let file = home.join("topic.md");
    let text = format!(
        "# Topic\n\n{text}[^e1]\n\n\
         [^e1]: Time: `2024-04-02`; Sources: [garden](openprogram/garden-2024/u2)\n"
    );
    std::fs::write(&file, text).expect("write the topic");
    let target = format!("topics/{path}");
    let out = scriptorium(home, &["edit", &target, "--from", file.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// [`home_with_note`] plus one topic in each of two projects, `alpha` and `beta`, all three
/// about the vegetable garden ([`ALPHA_FACT`], [`BETA_FACT`]).
pub(crate) fn home_with_projects() -> tempfile::TempDir {
    let home = home_with_note();
    add_topic(home.path(), "projects/alpha/garden.md", ALPHA_FACT);
    add_topic(home.path(), "projects/beta/garden.md", BETA_FACT);
    home
}

/// The paragraph of project `alpha`'s topic in [`home_with_projects`].
pub(crate) const ALPHA_FACT: &str = "The alpha app plans the vegetable garden by season.";
/// The paragraph of project `beta`'s topic in [`home_with_projects`].
pub(crate) const BETA_FACT: &str = "The beta sensor logs the vegetable garden soil.";

/// `scriptorium write <args>` until it succeeds: a write that finds the workspace lock busy
/// (another write, such as a hook's detached one, holds it) exits 75, retryable, having
/// written nothing. The bound only keeps a broken build from hanging the suite.
pub(crate) fn write_until_done(home: &Path, args: &[&str]) {
    for _ in 0..600 {
        let out = scriptorium(home, &[&["write"][..], args].concat());
        match out.status.code() {
            Some(0) => return,
            Some(75) => {}
            code => panic!("{code:?}: {}", String::from_utf8_lossy(&out.stderr)),
        }
    }
    panic!("the workspace lock never came free");
}

/// Runs the real `git` CLI in `dir`; panics unless it succeeds.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `scriptorium` with `args` and `--home home`, with a clean environment for the variables
/// Scriptorium reads.
pub(crate) fn scriptorium(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home)
        .args(args)
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("XDG_DATA_HOME")
        .output()
        .expect("the scriptorium binary runs")
}

/// Appends session `s` to `home`'s embedded store: `texts` as alternating user (Dana) and
/// assistant turns, a minute apart from 2024-03-15 09:00 UTC.
pub(crate) fn append_session(home: &Path, texts: &[&str]) {
    append_named_session(home, "s", texts);
}

/// [`append_session`] for the session `session`.
pub(crate) fn append_named_session(home: &Path, session: &str, texts: &[&str]) {
    use scriptorium_session_dag::{
        EmbeddedStore, Node, NodeId, NodeKind, Role, SessionId, SessionStore, Speaker, Timestamp,
    };
    let store = EmbeddedStore::open(home.join("sessions")).expect("store");
    let mut parent: Option<NodeId> = None;
    for (i, text) in texts.iter().enumerate() {
        let id = NodeId(format!("m{i}"));
        let user = i % 2 == 0;
        let node = Node {
            id: id.clone(),
            parent: parent.clone(),
            role: if user { Role::User } else { Role::Assistant },
            kind: NodeKind::Message,
            speaker: user.then(|| Speaker { id: "owner/local".into(), display: "Dana".into() }),
            content: (*text).to_owned(),
            created_at: Timestamp(1_710_493_200_000 + 60_000 * i as i64),
            metadata: std::collections::BTreeMap::new(),
            rewound: false,
        };
        store.append(&SessionId(session.into()), node).expect("append");
        parent = Some(id);
    }
}

/// The JSON a command printed, after checking it exited 0.
pub(crate) fn ok(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// Every occurrence of `phrase` in any file under `dir` (binary files included), by path.
pub(crate) fn files_holding(dir: &Path, phrase: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            out.extend(files_holding(&path, phrase));
        } else if kind.is_file()
            && std::fs::read(&path)
                .is_ok_and(|bytes| bytes.windows(phrase.len()).any(|w| w == phrase.as_bytes()))
        {
            out.push(path);
        }
    }
    out
}

/// Whether any object of the git repository at `dir` holds `phrase` (every object, loose or
/// packed, reachable or not, as `git cat-file --batch-all-objects` lists them).
pub(crate) fn git_objects_hold(dir: &Path, phrase: &str) -> bool {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["cat-file", "--batch-all-objects", "--batch"])
        .output()
        .expect("git runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout.windows(phrase.len()).any(|w| w == phrase.as_bytes())
}

pub(crate) fn fsck_clean(dir: &Path) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["fsck", "--full", "--strict"])
        .output()
        .expect("git runs");
    assert!(out.status.success(), "fsck: {}", String::from_utf8_lossy(&out.stderr));
}

pub(crate) fn check_clean(home: &Path) {
    let out = scriptorium(home, &["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
}

pub(crate) fn bare_remote(dir: &Path) -> PathBuf {
    let remote = dir.join("remote.git");
    let out = Command::new("git")
        .args(["init", "--quiet", "--bare", "--initial-branch=main"])
        .arg(&remote)
        .output()
        .expect("git runs");
    assert!(out.status.success());
    remote
}
