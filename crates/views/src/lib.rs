//! Derived views of a memory workspace: the root `core.md` rendered from `topics/core.md` under
//! a token budget, `timeline/`, `recent_events.jsonl` and `relations.json`, rebuilt whole or
//! only where an install changed them ([`affected`], [`update`]).
//!
//! Key decision: the renderers are pure functions of parsed units and text ([`render_core`],
//! [`rebuild`]) that return bytes, and the bytes are the Python implementation's, so a workspace
//! rebuilt here is byte-identical to one rebuilt by OpenProgram; a small IO layer
//! ([`write_views`], [`rebuild_workspace`]) writes them, atomically per file and only when they
//! change. Views never fail a transaction: the core render cannot fail, and everything here can
//! be deleted and rebuilt (`scriptorium rebuild`).
//!
//! One deliberate difference from the Python code (see
//! `docs/format.md#where-we-deliberately-differ`, row "core chunking"): in the core render each
//! footnote definition goes with the first kept paragraph that cites it, wherever it sits in the
//! master, instead of with the chunk above it.
//!
//! # Limitations
//!
//! - Core token counts are o200k_base, not the injected model's tokenizer; the budget is
//!   checked on the exact rendered text, so the render may stop a little earlier than a plain
//!   sum of chunk counts would.
//! - [`write_views`] replaces each file atomically, not the set of views as one step.
//! - Rebuilds are full: every view is recomputed from all units (well under the 50 ms budget for
//!   10 000 blocks); only unchanged files are spared a write.
//!
//! # Example
//!
//! ```
//! use scriptorium_views::{TrustAll, render_core};
//!
//! let master = "# Core\n\n\
//!     The owner prefers plain language.[^e-cecd4ddc68] ^18d91425\n\n\
//!     [^e-cecd4ddc68]: Time: `undated`; Sources: \
//!     [preference](../sources/openprogram/_v2/sess-7f2a.md#source-0640c5fc0b1951db)\n";
//! let core = render_core(Some(master), &TrustAll, 2_000);
//! let text = core.text.expect("a master renders");
//! assert!(text.contains("(sources/openprogram/_v2/sess-7f2a.md#source-0640c5fc0b1951db)"));
//! assert_eq!(core.report.rendered_block_ids, ["18d91425"]);
//! assert!(core.report.excluded_block_ids.is_empty());
//! assert!(core.report.tokens <= 2_000);
//! ```

mod core;
mod io;
mod paths;
mod pyjson;
mod views;

pub use crate::core::{
    CORE_TOPIC, CoreRender, CoreReport, DEFAULT_CORE_BUDGET, SourceTrust, TrustAll, compact,
    promote_legacy_core, render_core,
};
pub use crate::io::{
    Error, RebuildOptions, RebuildReport, TEMP_PREFIX, VIEWS_BOOT, WrittenViews, rebuild_workspace,
    views_written_in_another_boot, write_update, write_views,
};
pub use crate::views::{
    Affected, DEFAULT_RECENT_LIMIT, Numbering, Views, ViewsUpdate, affected, rebuild, update,
};
