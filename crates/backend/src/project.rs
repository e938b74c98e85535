//! Recall scoped to a project: which topics and archives a project's search sees (see
//! `docs/format.md#projects`).

use std::path::Path;

use scriptorium_search::ProjectScope;
use scriptorium_session_dag::{Page, SessionStore};
use scriptorium_topics_format::project::slug;

/// The project a user or a model names: a path (`.`, `..`, or anything with a `/`) to a
/// directory that exists stands for its project (its repository root, as imports record it);
/// any other value, a bare name such as `alpha` included, is a project's path or name.
pub fn resolve(project: &str) -> String {
    let is_path = matches!(project, "." | "..") || project.contains(['/', '\\']);
    let dir = Path::new(project);
    match std::path::absolute(dir) {
        Ok(absolute) if is_path && dir.is_dir() => {
            scriptorium_session_dag::import::project_of(&absolute)
        }
        _ => project.to_owned(),
    }
}

/// The scope of `project` ([`resolve`]d): its topic directory (`topics/projects/<slug>/`) and,
/// when `with_sources`, the archives of every session in `store` whose project has the same
/// slug. Topics-only recall (the per-turn hook) passes `with_sources = false` and reads no
/// session at all.
///
/// Errors: the store's, when it cannot list its sessions.
pub fn project_scope(
    store: Option<&dyn SessionStore>,
    project: &str,
    with_sources: bool,
) -> Result<ProjectScope, scriptorium_session_dag::Error> {
    let project = resolve(project);
    let mut archives = Vec::new();
    if let Some(store) = store.filter(|_| with_sources) {
        let wanted = slug(&project);
        let sessions = store.list_sessions(Page { offset: 0, limit: usize::MAX })?;
        archives = sessions
            .iter()
            .filter(|s| s.project.as_deref().is_some_and(|p| slug(p) == wanted))
            .map(|s| scriptorium_writer::archive_path(&s.id))
            .collect();
        archives.sort();
        archives.dedup();
    }
    Ok(ProjectScope::new(&project, archives))
}

/// [`project_scope`] over the session store of `home` (the one its configuration names, see
/// [`crate::sessions`]), which is only opened when sources are searched (and, for the
/// embedded store, when its directory exists).
pub fn project_scope_in(
    home: &Path,
    project: &str,
    with_sources: bool,
) -> Result<ProjectScope, scriptorium_session_dag::Error> {
    let store = match with_sources {
        true => {
            let config =
                crate::Config::load(home).map_err(|e| scriptorium_session_dag::Error::Io {
                    path: home.join(crate::config::CONFIG_FILE),
                    source: std::io::Error::other(e.to_string()),
                })?;
            crate::sessions::Sessions::open_existing(home, &config)?
        }
        false => None,
    };
    project_scope(store.as_deref().map(|s| s as &dyn SessionStore), project, with_sources)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use scriptorium_session_dag::{
        EmbeddedStore, Node, NodeId, NodeKind, Role, SessionId, Timestamp,
    };

    use super::*;

    fn session(store: &EmbeddedStore, id: &str, project: Option<&str>) {
        let node = Node {
            id: NodeId("n1".to_owned()),
            parent: None,
            role: Role::User,
            kind: NodeKind::Message,
            speaker: None,
            content: "hello".to_owned(),
            created_at: Timestamp(1_700_000_000_000),
            metadata: BTreeMap::new(),
            rewound: false,
        };
        let id = SessionId(id.to_owned());
        store.append(&id, node).expect("append");
        store.set_project(&id, project.map(str::to_owned)).expect("set project");
    }

    #[test]
    fn a_scope_lists_the_archives_of_the_sessions_of_the_same_project() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let store = EmbeddedStore::open(dir.path()).expect("a store");
        session(&store, "s-alpha-1", Some("/srv/code/alpha"));
        session(&store, "s-alpha-2", Some("/srv/ana/Alpha"));
        session(&store, "s-beta", Some("/srv/code/beta"));
        session(&store, "s-none", None);
        let scope = project_scope(Some(&store), "alpha", true).expect("a scope");
        assert_eq!(scope.topics, "topics/projects/alpha/");
        assert_eq!(
            scope.archives,
            ["sources/openprogram/_v2/s-alpha-1.md", "sources/openprogram/_v2/s-alpha-2.md"]
        );
        let topics_only = project_scope(Some(&store), "alpha", false).expect("a scope");
        assert!(topics_only.archives.is_empty(), "no session is read for topics only");
    }
}
