//! A model test of `memory_changes`: random sequences of create, update, delete and
//! move, valid and invalid, against an in-memory model of the records (id → content and label,
//! and the ordered IDs of every (file, headings) section). After every step the strictly parsed
//! workspace equals the model; a rejected step leaves every byte and the revision unchanged.

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;
use proptest::sample::Index;
use scriptorium_topics_format::source::ArchiveResolver;
use scriptorium_topics_format::{TopicFile, parse_tree};
use scriptorium_txn::{ErrorCode, Workspace};
use serde_json::{Value, json};

use super::update;
use crate::pipeline::{fixture, stages, tree_state};

/// The sections a step may target: the fixture's two files plus two new ones.
const SECTIONS: &[(&str, &[&str])] = &[
    ("topics/people/dana.md", &["Dana"]),
    ("topics/people/dana.md", &["Dana", "Hobbies"]),
    ("topics/projects/garden.md", &["Garden planner"]),
    ("topics/model/alpha.md", &["Alpha"]),
    ("topics/model/alpha.md", &["Alpha", "Sub"]),
    ("topics/model/beta.md", &["Beta"]),
];

/// Well-formed block IDs that the seeded ID source never hands out in these runs.
const UNKNOWN: &[&str] = &["feedf00d", "0badcafe", "deadbeef"];

type Section = (String, Vec<String>);

/// What the workspace should hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Model {
    /// id → (content, the labels of its evidence).
    records: BTreeMap<String, (String, Vec<String>)>,
    /// (topic path relative to `topics/`, headings) → IDs in file order; never empty.
    sections: BTreeMap<Section, Vec<String>>,
}

impl Model {
    fn ids(&self) -> Vec<String> {
        self.records.keys().cloned().collect()
    }

    fn section_of(&self, id: &str) -> Option<Section> {
        self.sections.iter().find(|(_, ids)| ids.iter().any(|i| i == id)).map(|(k, _)| k.clone())
    }

    fn remove(&mut self, id: &str) {
        for ids in self.sections.values_mut() {
            ids.retain(|i| i != id);
        }
        self.sections.retain(|_, ids| !ids.is_empty());
    }

    /// Inserts `ids` into `section` at `place`, keeping their order.
    fn insert(&mut self, section: Section, place: &Place, ids: &[String]) {
        let list = self.sections.entry(section).or_default();
        let at = match place {
            Place::Start => 0,
            Place::End => list.len(),
            Place::Before(anchor) => list.iter().position(|i| i == anchor).expect("anchor here"),
            Place::After(anchor) => list.iter().position(|i| i == anchor).expect("anchor here") + 1,
        };
        list.splice(at..at, ids.iter().cloned());
    }
}

/// A position inside a section.
#[derive(Clone, Debug)]
enum Place {
    Start,
    End,
    Before(String),
    After(String),
}

/// One abstract step; indices are resolved against the model when the step runs.
#[derive(Clone, Debug)]
enum Step {
    Create {
        section: usize,
        place: u8,
        anchor: Index,
    },
    Update {
        target: Index,
    },
    Delete {
        target: Index,
    },
    Move {
        first: Index,
        second: Option<Index>,
        section: usize,
        place: u8,
        anchor: Index,
    },
    /// An invalid operation on its own.
    Invalid {
        kind: u8,
        pick: Index,
    },
    /// A valid operation followed by an invalid one: the whole request is refused.
    Spoiled {
        valid: Box<Step>,
        kind: u8,
        pick: Index,
    },
}

fn valid_step() -> impl Strategy<Value = Step> {
    let section = 0..SECTIONS.len();
    prop_oneof![
        3 => (section.clone(), 0..4u8, any::<Index>())
            .prop_map(|(section, place, anchor)| Step::Create { section, place, anchor }),
        2 => any::<Index>().prop_map(|target| Step::Update { target }),
        2 => any::<Index>().prop_map(|target| Step::Delete { target }),
        2 => (any::<Index>(), proptest::option::of(any::<Index>()), section, 0..4u8,
              any::<Index>())
            .prop_map(|(first, second, section, place, anchor)| Step::Move {
                first, second, section, place, anchor,
            }),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => valid_step(),
        2 => (0..6u8, any::<Index>()).prop_map(|(kind, pick)| Step::Invalid { kind, pick }),
        1 => (valid_step(), 0..4u8, any::<Index>()).prop_map(|(valid, kind, pick)| {
            Step::Spoiled { valid: Box::new(valid), kind, pick }
        }),
    ]
}

fn destination(section: &Section, place: &Place) -> Value {
    let (path, headings) = section;
    let mut dest = json!({"topic_path": format!("topics/{path}"), "headings": headings});
    let (position, anchor) = match place {
        Place::Start => ("start", None),
        Place::End => ("end", None),
        Place::Before(a) => ("before", Some(a)),
        Place::After(a) => ("after", Some(a)),
    };
    dest["position"] = json!(position);
    if let Some(anchor) = anchor {
        dest["anchor_memory_id"] = json!(anchor);
    }
    dest
}

fn section(i: usize) -> Section {
    let (path, headings) = SECTIONS[i];
    let path = path.strip_prefix("topics/").expect("under topics/").to_owned();
    (path, headings.iter().map(|h| (*h).to_owned()).collect())
}

/// A place in `section` of the model; before/after need an anchor there not in `excluded`.
fn place(model: &Model, section: &Section, kind: u8, anchor: &Index, excluded: &[String]) -> Place {
    let candidates: Vec<&String> = model
        .sections
        .get(section)
        .map(|ids| ids.iter().filter(|i| !excluded.contains(i)).collect())
        .unwrap_or_default();
    match kind {
        2 | 3 if !candidates.is_empty() => {
            let anchor = anchor.get(&candidates).to_string();
            if kind == 2 { Place::Before(anchor) } else { Place::After(anchor) }
        }
        0 => Place::Start,
        _ => Place::End,
    }
}

/// Runs the steps, checking the workspace against the model after each.
struct Runner<'a> {
    root: &'a Path,
    ws: Workspace,
    model: Model,
    deleted: Vec<String>,
    counter: usize,
}

/// A resolved request: its ops, and the model it leads to (`None`: it must be refused, with
/// `code` when known).
struct Planned {
    ops: Vec<Value>,
    outcome: Result<Option<Model>, Option<ErrorCode>>,
    /// The section a create lands in (its ID is only known after install).
    created: Option<(Section, Place, String, String)>,
}

impl Runner<'_> {
    fn next(&mut self) -> usize {
        self.counter += 1;
        self.counter
    }

    /// A valid op against the model, and the model after it; `None` when it cannot apply.
    fn valid(&mut self, step: &Step) -> Option<Planned> {
        let ids = self.model.ids();
        match step {
            Step::Create { section: s, place: p, anchor } => {
                let n = self.next();
                let section = section(*s);
                let place = place(&self.model, &section, *p, anchor, &[]);
                let content = format!("Fact {n} was recorded.");
                let label = format!("note {n}");
                let op = json!({"op": "create_record", "content": content, "time": "2024-03",
                    "sources": [{"source": format!("openprogram/garden/u{}", n % 5 + 1),
                                 "label": label}],
                    "destination": destination(&section, &place)});
                Some(Planned {
                    ops: vec![op],
                    outcome: Ok(None),
                    created: Some((section, place, content, label)),
                })
            }
            Step::Update { target } if !ids.is_empty() => {
                let n = self.next();
                let id = target.get(&ids).clone();
                let content = format!("Fact {n} replaced an older one.");
                let label = format!("revision {n}");
                let op = json!({"op": "update_record", "memory_id": id, "content": content,
                    "time": null,
                    "sources": [{"source": format!("openprogram/garden/u{}", n % 5 + 1),
                                 "label": label}]});
                let mut model = self.model.clone();
                model.records.insert(id, (content, vec![label]));
                Some(Planned { ops: vec![op], outcome: Ok(Some(model)), created: None })
            }
            Step::Delete { target } if !ids.is_empty() => {
                let id = target.get(&ids).clone();
                let mut model = self.model.clone();
                model.records.remove(&id);
                model.remove(&id);
                self.deleted.push(id.clone());
                Some(Planned {
                    ops: vec![json!({"op": "delete_record", "memory_id": id})],
                    outcome: Ok(Some(model)),
                    created: None,
                })
            }
            Step::Move { first, second, section: s, place: p, anchor } if !ids.is_empty() => {
                let mut moved = vec![first.get(&ids).clone()];
                if let Some(second) = second {
                    let other = second.get(&ids).clone();
                    if !moved.contains(&other) {
                        moved.push(other);
                    }
                }
                let section = section(*s);
                let place = place(&self.model, &section, *p, anchor, &moved);
                let mut model = self.model.clone();
                for id in &moved {
                    model.remove(id);
                }
                model.insert(section.clone(), &place, &moved);
                let op = json!({"op": "move_records", "memory_ids": moved,
                    "destination": destination(&section, &place)});
                Some(Planned { ops: vec![op], outcome: Ok(Some(model)), created: None })
            }
            _ => None,
        }
    }

    /// An invalid op and the code it is refused with.
    fn invalid(&self, kind: u8, pick: &Index) -> (Vec<Value>, ErrorCode) {
        let ids = self.model.ids();
        let unknown =
            UNKNOWN.iter().find(|u| !self.deleted.iter().any(|d| d == *u)).expect("one unknown");
        let gone = if self.deleted.is_empty() {
            (*unknown).to_owned()
        } else {
            pick.get(&self.deleted).clone()
        };
        let create = |dest: Value| {
            json!({"op": "create_record", "content": "Never written.", "time": "2024",
                   "sources": [{"source": "openprogram/garden/u1", "label": "never"}],
                   "destination": dest})
        };
        match kind {
            0 => (
                vec![json!({"op": "update_record", "memory_id": unknown, "content": "No.",
                            "time": null, "sources": [{"source": "openprogram/garden/u1",
                                                       "label": "no"}]})],
                ErrorCode::MemoryNotFound,
            ),
            1 => {
                (vec![json!({"op": "delete_record", "memory_id": gone})], ErrorCode::MemoryNotFound)
            }
            2 => (
                vec![json!({"op": "move_records", "memory_ids": [gone],
                            "destination": destination(&section(0), &Place::End)})],
                ErrorCode::MemoryNotFound,
            ),
            3 => {
                let mut dest = destination(&section(pick.index(SECTIONS.len())), &Place::End);
                dest["position"] = json!("middle");
                (vec![create(dest)], ErrorCode::InvalidArgument)
            }
            4 if !ids.is_empty() => {
                // The anchor exists but lives in another section than the destination.
                let anchor = pick.get(&ids).clone();
                let home = self.model.section_of(&anchor).expect("placed");
                let elsewhere =
                    (0..SECTIONS.len()).map(section).find(|s| *s != home).expect("another section");
                (
                    vec![create(destination(&elsewhere, &Place::After(anchor)))],
                    ErrorCode::InvalidArgument,
                )
            }
            5 if !ids.is_empty() => {
                let id = pick.get(&ids).clone();
                (
                    vec![
                        json!({"op": "delete_record", "memory_id": id}),
                        json!({"op": "move_records", "memory_ids": [id],
                               "destination": destination(&section(5), &Place::End)}),
                    ],
                    ErrorCode::InvalidArgument,
                )
            }
            _ => (
                vec![create(destination(&section(0), &Place::Before((*unknown).to_owned())))],
                ErrorCode::MemoryNotFound,
            ),
        }
    }

    fn plan(&mut self, step: &Step) -> Option<Planned> {
        match step {
            Step::Invalid { kind, pick } => {
                let (ops, code) = self.invalid(*kind, pick);
                Some(Planned { ops, outcome: Err(Some(code)), created: None })
            }
            Step::Spoiled { valid, kind, pick } => {
                let deleted = self.deleted.len();
                let mut planned = self.valid(valid)?;
                self.deleted.truncate(deleted);
                let (bad, _) = self.invalid(*kind, pick);
                planned.ops.extend(bad);
                planned.outcome = Err(None);
                planned.created = None;
                Some(planned)
            }
            other => self.valid(other),
        }
    }

    fn run(&mut self, step: &Step) {
        let deleted = self.deleted.len();
        let Some(planned) = self.plan(step) else { return };
        let body = json!({"memory_changes": planned.ops});
        let before = tree_state(self.root, false);
        let revision = self.ws.revision().expect("revision");
        let result = update(&self.ws, body.clone());
        match planned.outcome {
            Err(code) => {
                let error = result.expect_err("the step must be refused");
                match code {
                    Some(code) => assert_eq!(error.code(), code, "{error}: {body}"),
                    None => assert!(
                        matches!(
                            error.code(),
                            ErrorCode::InvalidArgument | ErrorCode::MemoryNotFound
                        ),
                        "{error}: {body}"
                    ),
                }
                assert_eq!(tree_state(self.root, false), before, "a rejection changed bytes");
                assert_eq!(self.ws.revision().expect("revision"), revision);
                assert!(stages(self.root).is_empty(), "stage left behind");
                self.deleted.truncate(deleted);
            }
            Ok(model) => {
                let installed = result.unwrap_or_else(|e| panic!("{e:?} for {body}"));
                // A step that changes no byte installs nothing and keeps the revision.
                if installed.noop {
                    assert_eq!(installed.revision, revision, "{body}");
                    assert_eq!(tree_state(self.root, false), before, "a no-op changed bytes");
                } else {
                    assert_ne!(installed.revision, revision, "{body}");
                }
                let model = match (model, planned.created) {
                    (Some(model), _) => model,
                    (None, Some((section, place, content, label))) => {
                        let ids: Vec<String> =
                            installed.block_ids.values().map(|id| id.as_str().to_owned()).collect();
                        assert_eq!(ids.len(), 1, "one new ID: {ids:?}");
                        let id = ids[0].clone();
                        let mut model = self.model.clone();
                        model.records.insert(id.clone(), (content, vec![label]));
                        model.insert(section, &place, &[id]);
                        model
                    }
                    (None, None) => unreachable!("a valid step has an outcome"),
                };
                self.model = model;
            }
        }
        assert_eq!(parsed(self.root), self.model, "after {body}");
    }
}

/// Every regular file under `root/<dir>`, keyed by its path relative to `root`.
fn read_tree(root: &Path, dir: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.join(dir)];
    while let Some(path) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&path) else { continue };
        for entry in entries {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(root).expect("inside").to_string_lossy().into_owned();
                out.insert(rel, std::fs::read_to_string(&path).expect("UTF-8 file"));
            }
        }
    }
    out
}

/// The workspace as the strict parser sees it, in the model's terms.
fn parsed(root: &Path) -> Model {
    let files: Vec<TopicFile> = read_tree(root, "topics")
        .into_iter()
        .map(|(rel, text)| {
            TopicFile::new(rel.strip_prefix("topics/").expect("under topics/"), text)
        })
        .collect();
    let parse = parse_tree(&files, &ArchiveResolver::new(read_tree(root, "sources")));
    assert!(parse.is_valid(), "{:?}", parse.diagnostics);
    let mut model = Model::default();
    for unit in parse.units {
        assert!(!unit.legacy && unit.aliases.is_empty(), "{unit:?}");
        let section = (unit.topic_path.clone(), unit.headings.to_vec());
        model.sections.entry(section).or_default().push(unit.memory_id.clone());
        model.records.insert(unit.memory_id, (unit.content, unit.labels));
    }
    model
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn memory_changes_follow_the_model(steps in prop::collection::vec(step(), 1..=8)) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let ws = fixture(root);
        let model = parsed(root);
        let mut runner = Runner { root, ws, model, deleted: Vec::new(), counter: 0 };
        for step in &steps {
            runner.run(step);
        }
    }
}
