//! `scriptorium edit`: deleting paragraphs is said and confirmed, and a refused text is reported
//! at its own lines.

use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::{home_with_sources, scriptorium};

/// Three paragraphs citing the example archive's `u2`.
const GARDEN: &str = "# Garden\n\n\
Dana grows tomatoes on the balcony.[^e1]\n\n\
Dana waters them every morning before work.[^e1]\n\n\
Dana plans to add chili peppers next spring.[^e1]\n\n\
[^e1]: Time: `2024-04-02`; Sources: [garden](openprogram/garden-2024/u2)\n";

/// A home whose `topics/garden.md` holds [`GARDEN`]; returns it with the three block IDs.
fn home_with_garden() -> (tempfile::TempDir, Vec<String>) {
    let home = home_with_sources();
    let file = home.path().join("garden.md");
    fs::write(&file, GARDEN).expect("write the topic");
    let out = edit(home.path(), &file, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let ids = installed(home.path())
        .lines()
        .filter(|l| l.starts_with("Dana"))
        .map(|l| l.rsplit(" ^").next().expect("a block id").to_owned())
        .collect();
    (home, ids)
}

fn installed(home: &Path) -> String {
    fs::read_to_string(home.join("memory/topics/garden.md")).expect("the topic")
}

fn revision(home: &Path) -> String {
    let status = scriptorium(home, &["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).expect("json");
    status["revision"].as_str().expect("a revision").to_owned()
}

/// `scriptorium edit topics/garden.md --from <file> <extra>`, standard input not a terminal.
fn edit(home: &Path, file: &Path, extra: &[&str]) -> Output {
    let from = file.to_str().expect("utf-8");
    scriptorium(home, &[&["edit", "topics/garden.md", "--from", from][..], extra].concat())
}

/// The installed text without the tomato and chili paragraphs.
fn without_two(home: &Path) -> String {
    installed(home)
        .lines()
        .filter(|l| !l.contains("tomatoes") && !l.contains("chili"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Regression (issue 34, item 9): an edit that left paragraphs out failed with a bare
/// `BLOCK_ID_REMOVED` at lines of the installed file and no way to delete them. It names each
/// paragraph and, refused without a terminal to ask, says the flag that deletes them, which
/// then does so in one transaction.
#[test]
fn an_edit_that_deletes_paragraphs_names_them_and_needs_allow_delete() {
    let (home, ids) = home_with_garden();
    let [tomatoes, waters, chili] = ids.as_slice() else { panic!("three paragraphs: {ids:?}") };
    let file = home.path().join("fewer.md");
    fs::write(&file, without_two(home.path())).expect("write");
    let (before, text_before) = (revision(home.path()), installed(home.path()));

    let refused = edit(home.path(), &file, &[]);
    assert_eq!(refused.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&refused.stdout);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    for (id, words) in [(tomatoes, "Dana grows tomatoes"), (chili, "Dana plans to add chili")] {
        let line = stdout
            .lines()
            .find(|l| l.contains(&format!("^{id} “{words}")))
            .unwrap_or_else(|| panic!("^{id} is not named: {stdout}"));
        assert!(line.starts_with("topics/garden.md: BLOCK_ID_REMOVED"), "{line}");
    }
    let said = format!(
        "this edit deletes 2 paragraphs: ^{tomatoes} “Dana grows tomatoes on the balcony.”, \
         ^{chili} “Dana plans to add chili peppers next spring.”"
    );
    assert!(stderr.contains(&said), "{stderr}");
    assert!(stderr.contains("--allow-delete"), "the flag is named: {stderr}");
    assert_eq!((revision(home.path()), installed(home.path())), (before, text_before));

    let allowed = edit(home.path(), &file, &["--allow-delete"]);
    assert_eq!(allowed.status.code(), Some(0), "{}", String::from_utf8_lossy(&allowed.stderr));
    let stdout = String::from_utf8_lossy(&allowed.stdout);
    assert!(stdout.contains(&said.replacen("this edit deletes", "deleted", 1)), "{stdout}");
    let after = installed(home.path());
    assert!(after.contains(&format!(" ^{waters}")), "{after}");
    assert!(!after.contains("tomatoes") && !after.contains("chili"), "{after}");
    let log = scriptorium(home.path(), &["log", "topics/garden.md", "--json"]);
    let log: serde_json::Value = serde_json::from_slice(&log.stdout).expect("json");
    assert_eq!(log["commits"].as_array().map(Vec::len), Some(2), "one transaction: {log}");
}

/// `scriptorium edit` under a terminal (`script` gives it one), answering `answer`.
fn edit_on_a_terminal(home: &Path, file: &Path, answer: &str) -> (Option<i32>, String) {
    let command = format!(
        "'{}' --home '{}' edit topics/garden.md --from '{}'",
        env!("CARGO_BIN_EXE_scriptorium"),
        home.display(),
        file.display()
    );
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("XDG_DATA_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("`script` (util-linux) runs");
    child.stdin.take().expect("stdin").write_all(answer.as_bytes()).expect("answer");
    let out = child.wait_with_output().expect("script ends");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// On a terminal the edit lists the paragraphs it deletes and asks; `n` changes nothing, `y`
/// deletes them.
#[test]
fn on_a_terminal_an_edit_asks_before_deleting_paragraphs() {
    let (home, ids) = home_with_garden();
    let file = home.path().join("fewer.md");
    fs::write(&file, without_two(home.path())).expect("write");
    let before = revision(home.path());

    let (code, screen) = edit_on_a_terminal(home.path(), &file, "n\n");
    assert_eq!(code, Some(1), "{screen}");
    assert!(screen.contains("this edit deletes 2 paragraphs:"), "{screen}");
    assert!(screen.contains(&format!("^{} “Dana grows tomatoes", ids[0])), "{screen}");
    assert!(screen.contains("delete them? [y/N]"), "{screen}");
    assert_eq!(revision(home.path()), before, "answered no: nothing changed");

    let (code, screen) = edit_on_a_terminal(home.path(), &file, "y\n");
    assert_eq!(code, Some(0), "{screen}");
    let after = installed(home.path());
    assert!(!after.contains("tomatoes") && !after.contains("chili"), "{after}");
    assert!(after.contains("waters them"), "{after}");
}

/// Regression (issue 34, item 9): normalization drops sections without records, and the
/// engine reported violations at lines of the normalized text, above the ones written.
#[test]
fn a_refused_edit_points_at_lines_of_the_text_it_read() {
    let (home, _) = home_with_garden();
    let sent = installed(home.path())
        .replacen("\n\n", "\n\n## Ideas\n\n## Later\n\n", 1)
        .replace("`2024-04-02`", "`2024-13-45`");
    let line = sent.lines().position(|l| l.contains("2024-13-45")).expect("the definition") + 1;
    let file = home.path().join("broken.md");
    fs::write(&file, &sent).expect("write");
    let out = edit(home.path(), &file, &[]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let want = format!("topics/garden.md:{line}:");
    assert!(
        stdout.lines().any(|l| l.starts_with(&want) && l.contains("INVALID_TOPIC_FORMAT")),
        "expected a violation at {want}\n{stdout}\n{sent}"
    );
}
