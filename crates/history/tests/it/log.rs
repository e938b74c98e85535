//! `log(path)` agrees with `git log -- <path>`.

use scriptorium_history::INITIAL_MESSAGE;

use crate::support::{Ws, at, commit};

#[test]
fn log_agrees_with_git_log() {
    let ws = Ws::new();
    ws.write("topics/a.md", "a\n");
    ws.write("topics/people/dave.md", "dave\n");
    let history = ws.open();
    let steps: [(&str, &str); 6] = [
        ("topics/a.md", "a1\n"),
        ("topics/people/dave.md", "dave1\n"),
        ("topics/b.md", "b\n"),
        ("topics/a.md", "a2\n"),
        ("topics/b.md", ""),
        ("topics/people/dave.md", "dave2\n"),
    ];
    for (i, (path, content)) in steps.iter().enumerate() {
        if content.is_empty() {
            ws.remove(path);
        } else {
            ws.write(path, content);
        }
        let i = i64::try_from(i).unwrap() + 1;
        commit(&history, &format!("t-{i}"), &format!("memory: edit {path}"), Some(&[path]), at(i));
    }
    for path in [
        None,
        Some("topics/a.md"),
        Some("topics/b.md"),
        Some("topics/people"),
        Some("topics"),
        Some("missing.md"),
    ] {
        let ours: Vec<String> =
            history.log(path, usize::MAX).unwrap().into_iter().map(|e| e.commit).collect();
        let mut args = vec!["log", "--format=%H"];
        if let Some(path) = path {
            args.extend(["--", path]);
        }
        assert_eq!(ours, ws.git_lines(&args), "{path:?}");
    }

    let entries = history.log(Some("topics/a.md"), usize::MAX).unwrap();
    let summaries: Vec<(&str, Option<&str>)> =
        entries.iter().map(|e| (e.summary.as_str(), e.txn_id.as_deref())).collect();
    assert_eq!(
        summaries,
        [
            ("memory: edit topics/a.md", Some("t-4")),
            ("memory: edit topics/a.md", Some("t-1")),
            (INITIAL_MESSAGE, None),
        ]
    );
    assert_eq!(entries[0].time, at(4));
    assert_eq!(history.log(Some("topics/a.md"), 2).unwrap().len(), 2);
    assert_eq!(history.log(None, 0).unwrap().len(), 0);
}
