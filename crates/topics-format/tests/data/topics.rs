//! Data-driven trials (filled by the formats issue).

use scriptorium_testkit::Trial;

/// The trials of this area.
pub(crate) fn trials() -> Vec<Trial> {
    Vec::new()
}
