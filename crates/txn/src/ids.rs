//! ID newtypes (`Revision`, `TxnId`, `WorkspaceId`) and the injected clock and randomness.

use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The workspace revision: an opaque string that changes on every install and every archive
/// append and whenever `topics/` or `sources/` change outside a transaction; runtime state
/// (`runtime.json`), lock, status, cache and index files never move it, and neither does a
/// transaction that changes nothing.
///
/// Format (informative; compare revisions only for equality): `<counter>-<16 hex>`, where
/// `counter` is the install/append counter recorded in `.scriptorium/revision` and the hex is
/// the first 8 bytes of SHA-256 over `scriptorium-revision/2`, the counter, the last installed
/// transaction ID, the digest of the `topics/` tree and the digest of `sources/`
/// (see the `revision` section of the crate docs and `docs/format.md#revision`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Revision(pub(crate) String);

impl Revision {
    /// Wraps a revision string the caller read earlier (e.g. from a request's `base_revision`).
    pub fn new(value: impl Into<String>) -> Self {
        Revision(value.into())
    }

    /// The string form.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The counter part (`<counter>-<hex>`): it grows with every install and archive append,
    /// whatever else changed (`None` for a string that is not a revision).
    pub fn counter(&self) -> Option<u64> {
        self.0.split_once('-')?.0.parse().ok()
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A transaction ID: `t-<13-digit unix milliseconds>-<8 hex>` (sorts by start time).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TxnId(pub(crate) String);

impl TxnId {
    pub(crate) fn generate(clock: &dyn Clock, ids: &dyn IdSource) -> TxnId {
        let millis = clock.now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        TxnId(format!("t-{millis:013}-{}", ids.hex8()))
    }

    /// The string form.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TxnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The workspace identity, `w-` + 8 lowercase hex (see `docs/format.md#workspace-id`): the one
/// type the markers and the faces share.
pub use scriptorium_topics_format::WorkspaceId;

/// The wall clock, injected so tests are deterministic.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Now.
    fn now(&self) -> SystemTime;
}

/// [`SystemTime::now`].
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[expect(clippy::disallowed_methods, reason = "the real source behind the injected txn::Clock")]
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// Randomness for IDs, injected so tests are deterministic.
pub trait IdSource: Send + Sync + fmt::Debug {
    /// 8 lowercase hex digits.
    fn hex8(&self) -> String;
}

/// `getrandom` (the OS generator); falls back to a time-seeded counter if it fails.
#[derive(Debug, Default)]
pub struct RandomIds {
    fallback: AtomicU64,
}

impl IdSource for RandomIds {
    fn hex8(&self) -> String {
        let mut bytes = [0u8; 4];
        if getrandom::fill(&mut bytes).is_err() {
            #[expect(
                clippy::disallowed_methods,
                reason = "entropy for an ID when getrandom fails, not a time"
            )]
            let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
            let n = self.fallback.fetch_add(1, Ordering::Relaxed);
            let mixed = (nanos as u64) ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            bytes.copy_from_slice(&mixed.to_le_bytes()[..4]);
        }
        hex::encode(bytes)
    }
}

/// A deterministic sequence (a 64-bit LCG from `seed`) for tests.
#[derive(Debug)]
pub struct SeqIds {
    state: Mutex<u64>,
}

impl SeqIds {
    /// A sequence starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SeqIds { state: Mutex::new(seed) }
    }
}

impl IdSource for SeqIds {
    fn hex8(&self) -> String {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        format!("{:08x}", (*state >> 32) as u32)
    }
}
