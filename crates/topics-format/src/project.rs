//! Where a project's memory lives: `topics/projects/<slug>/…`.
//!
//! A session's project is a path (the repository root of the working directory its transcript
//! names, else that directory; see `session-dag`'s `project_of`). Its topics live in one
//! directory named by the project's *slug*: the last path component, lower-cased, every run
//! of other characters than letters and digits replaced by one `-`; the single file
//! `topics/projects/<slug>.md` (how the Python implementation files a project) belongs to it
//! too. Every topic outside `topics/projects/` belongs to no project (the owner, people,
//! preferences) and is shared by all of them.
//!
//! Two projects whose directories have the same name (`~/job/api` and `~/personal/api`)
//! share a slug, and so a directory of topics.

/// The directory under `topics/` that holds the projects' topics.
pub const PROJECTS_DIR: &str = "projects";

/// The slug of `project` (see the module docs); `project` when nothing is left.
///
/// ```
/// use scriptorium_topics_format::project::slug;
/// assert_eq!(slug("/srv/ana/code/Budget Tracker/"), "budget-tracker");
/// assert_eq!(slug("C:\\Users\\ana\\garden_planner"), "garden-planner");
/// assert_eq!(slug("/"), "project");
/// ```
pub fn slug(project: &str) -> String {
    let last = project.trim_end_matches(['/', '\\']).rsplit(['/', '\\']).next().unwrap_or("");
    let mut out = String::with_capacity(last.len());
    for c in last.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let trimmed = out.trim_end_matches('-');
    if trimmed.is_empty() { "project".to_owned() } else { trimmed.to_owned() }
}

/// The workspace-relative directory of `project`'s topics, with a trailing `/`:
/// `topics/projects/<slug>/`.
pub fn topics_dir(project: &str) -> String {
    format!("topics/{PROJECTS_DIR}/{}/", slug(project))
}

/// The workspace-relative single topic file of `project`, as the Python implementation files a
/// project (`topics/projects/<slug>.md`): part of the project as much as its directory.
pub fn topic_file(project: &str) -> String {
    format!("topics/{PROJECTS_DIR}/{}.md", slug(project))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_keep_letters_and_digits_of_the_last_component() {
        assert_eq!(slug("/srv/repos/scriptorium"), "scriptorium");
        assert_eq!(slug("/srv/repos/My.App-2"), "my-app-2");
        assert_eq!(slug("/srv/repos/--x--"), "x");
        assert_eq!(slug("/srv/repos/记忆 库"), "记忆-库");
        assert_eq!(slug(""), "project");
        assert_eq!(topics_dir("/srv/repos/App"), "topics/projects/app/");
        assert_eq!(topic_file("/srv/repos/App"), "topics/projects/app.md");
    }
}
