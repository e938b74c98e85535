//! Workspace-relative path arithmetic of the views: Python's `os.path.normpath` and
//! `os.path.relpath` (from `topics_format::python`) and the directory of a topic.

pub(crate) use scriptorium_topics_format::python::{
    is_space as is_py_space, normpath_parts as normalize, relpath_parts as relative,
};

/// The directory components of `topics/<topic_path>`.
pub(crate) fn topic_dir(topic_path: &str) -> Vec<&str> {
    let mut parts = normalize(topic_path);
    parts.pop();
    parts.insert(0, "topics");
    parts
}
