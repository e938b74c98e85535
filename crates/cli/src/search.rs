//! `scriptorium search QUERY`: recall over topic blocks and source records.

use std::process::ExitCode;

use scriptorium_backend::project::project_scope_in;
use scriptorium_search::{Query, fence, recall_text};

use crate::home::Home;
use crate::memory;
use crate::output::{out, outln};

/// Arguments of `scriptorium search`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// What to recall.
    query: String,
    /// How many results (1–10).
    #[arg(long, default_value_t = scriptorium_search::DEFAULT_TOP_K)]
    top_k: usize,
    /// Only files under this prefix (`people`, `topics/people`, `sources/openprogram`).
    #[arg(long)]
    prefix: Option<String>,
    /// Only results dated on or after `YYYY[-MM[-DD]]`.
    #[arg(long)]
    from: Option<String>,
    /// Only results dated on or before `YYYY[-MM[-DD]]`.
    #[arg(long)]
    to: Option<String>,
    /// Only source records of this speaker (id or display name).
    #[arg(long)]
    speaker: Option<String>,
    /// Topic blocks only (no source records).
    #[arg(long)]
    topics_only: bool,
    /// Scope to one project: a directory path (`.`, `../app`, `/srv/app`: the repository it is
    /// in) or a project's name (`app`). The project's topics (`topics/projects/<name>/`), the topics of no
    /// project, and the records of the project's sessions; other projects are left out.
    #[arg(long, value_name = "DIR|NAME")]
    project: Option<String>,
    /// Print the fenced recall block exactly as it is injected before a turn.
    #[arg(long)]
    fenced: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs the command: exit 0 (also when nothing is recalled), 2 on a malformed query (a bad
/// date, an out-of-range `--top-k`).
pub(crate) fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let memory = memory::open_for_reading(home)?;
    let mut query = Query::new(args.query);
    query.top_k = args.top_k;
    query.path_prefix = args.prefix;
    query.date_from = args.from;
    query.date_to = args.to;
    query.speaker = args.speaker;
    query.include_sources = !args.topics_only;
    if let Some(project) = args.project.as_deref() {
        query.project = Some(project_scope_in(home.root(), project, query.include_sources)?);
    }
    let (hits, adoption) = memory.search_reporting(&query)?;
    // Sessions name the records' archives; without them a record is named by its archive.
    let labels = scriptorium_backend::hits::labels_in(home.root(), &hits);
    let label = |hit: &scriptorium_search::Hit| labels.get(&hit.path);
    if args.json {
        let rows: Vec<serde_json::Value> =
            hits.iter().map(|hit| scriptorium_backend::hits::to_json(hit, label(hit))).collect();
        let mut doc = serde_json::json!({ "hits": rows });
        if let Some(outside) = adoption.as_ref().and_then(|a| a.report()) {
            doc["outside_edits"] = outside;
        }
        crate::output::document(&doc)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(note) = adoption.as_ref().and_then(|a| a.note()) {
        // On stderr: stdout stays exactly what is recalled (`--fenced` is injected as is).
        eprintln!("{note}");
    }
    if args.fenced {
        out!("{}", fence(&recall_text(&hits)));
    } else if hits.is_empty() {
        outln!("nothing recalled");
    } else {
        for hit in &hits {
            outln!("{}  ({:.2})", scriptorium_backend::hits::origin(hit, label(hit)), hit.score);
            outln!("    {}", hit.snippet.replace('\n', " "));
            outln!("    {}", hit.link());
            if !hit.collapsed.is_empty() {
                outln!("    + {}", collapsed_note(hit));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What a hit's [`scriptorium_search::Hit::collapsed`] matches are, in words.
fn collapsed_note(hit: &scriptorium_search::Hit) -> String {
    let cited = hit.collapsed.iter().filter(|id| hit.refs.contains(id)).count();
    let copies = hit.collapsed.len() - cited;
    let mut parts = Vec::new();
    if cited > 0 {
        parts.push(format!(
            "{cited} cited record{} (its evidence)",
            if cited == 1 { "" } else { "s" }
        ));
    }
    if copies > 0 {
        parts.push(format!(
            "{copies} match{} with the same text",
            if copies == 1 { "" } else { "es" }
        ));
    }
    parts.join(", ")
}
