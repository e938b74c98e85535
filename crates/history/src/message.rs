//! Commit messages, the `Txn-Id:` trailer, the fixed identity and the injected time.

use crate::Error;

/// The trailer key that names the installed transaction of a commit.
pub const TXN_ID_TRAILER: &str = "Txn-Id";
/// The author and committer name of every commit this crate makes.
pub const IDENTITY_NAME: &str = "Scriptorium";
/// The author and committer email of every commit this crate makes (`.invalid` is reserved by
/// RFC 2606 and can never reach anyone).
pub const IDENTITY_EMAIL: &str = "memory@scriptorium.invalid";
/// The message of the first commit, made by [`History::open_or_init`](crate::History::open_or_init).
pub const INITIAL_MESSAGE: &str = "memory: initialize history";

const MAX_TXN_ID_LEN: usize = 200;

/// A commit timestamp, injected by the caller so that tests are deterministic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Time {
    /// Seconds since the Unix epoch (UTC).
    pub seconds: i64,
    /// The local time zone's offset from UTC, in seconds (east positive, e.g. `3600` for +01:00).
    pub offset_seconds: i32,
}

impl Time {
    /// A UTC time at `seconds` since the Unix epoch.
    pub fn utc(seconds: i64) -> Self {
        Time { seconds, offset_seconds: 0 }
    }

    pub(crate) fn signature(self) -> gix::actor::Signature {
        gix::actor::Signature {
            name: IDENTITY_NAME.into(),
            email: IDENTITY_EMAIL.into(),
            time: gix::date::Time { seconds: self.seconds, offset: self.offset_seconds },
        }
    }
}

impl From<gix::date::Time> for Time {
    fn from(time: gix::date::Time) -> Self {
        Time { seconds: time.seconds, offset_seconds: time.offset }
    }
}

/// Refuse ids that cannot be a single-line trailer value.
pub(crate) fn check_txn_id(txn_id: &str) -> Result<(), Error> {
    let refuse = |reason| Err(Error::InvalidTxnId { txn_id: txn_id.to_owned(), reason });
    if txn_id.is_empty() {
        return refuse("empty");
    }
    if txn_id.len() > MAX_TXN_ID_LEN {
        return refuse("longer than 200 bytes");
    }
    if txn_id.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return refuse("contains whitespace or a control character");
    }
    Ok(())
}

/// `message` (trailing whitespace removed), a blank line, and the `Txn-Id:` trailer.
pub(crate) fn with_trailer(message: &str, txn_id: &str) -> String {
    let body = message.trim_end();
    if body.is_empty() {
        format!("memory: transaction {txn_id}\n\n{TXN_ID_TRAILER}: {txn_id}\n")
    } else {
        format!("{body}\n\n{TXN_ID_TRAILER}: {txn_id}\n")
    }
}

/// The `Txn-Id` trailer of a commit message: the last `Txn-Id:` line (key compared
/// case-insensitively, as git does) of the message's last paragraph, provided that paragraph is
/// not the subject. `None` when there is none, e.g. for a commit made with the git CLI.
pub(crate) fn txn_id_of(message: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(message);
    let text = text.replace("\r\n", "\n");
    let text = text.trim_end();
    let (_, last_paragraph) = text.rsplit_once("\n\n")?;
    last_paragraph
        .lines()
        .filter_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(TXN_ID_TRAILER).then(|| value.trim().to_owned())
        })
        .rfind(|value| !value.is_empty())
}

/// The first line of a message.
pub(crate) fn summary_of(message: &[u8]) -> String {
    let text = String::from_utf8_lossy(message);
    text.trim_start().lines().next().unwrap_or_default().trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailer_round_trips() {
        let message = with_trailer("memory: incremental transaction\n", "t-0001");
        assert_eq!(message, "memory: incremental transaction\n\nTxn-Id: t-0001\n");
        assert_eq!(txn_id_of(message.as_bytes()).as_deref(), Some("t-0001"));
        assert_eq!(summary_of(message.as_bytes()), "memory: incremental transaction");
    }

    #[test]
    fn trailer_is_read_only_from_the_last_paragraph() {
        assert_eq!(txn_id_of(b"Txn-Id: a\n"), None, "a subject is not a trailer");
        assert_eq!(txn_id_of(b"subject\n\nTxn-Id: a\n\nmore text\n"), None);
        assert_eq!(
            txn_id_of(b"subject\n\nbody\n\nSigned-off-by: x\ntxn-id: b\n").as_deref(),
            Some("b")
        );
        assert_eq!(txn_id_of(b"subject\r\n\r\nTxn-Id: c\r\n").as_deref(), Some("c"));
        assert_eq!(txn_id_of(b"by hand"), None);
        assert_eq!(txn_id_of(b""), None);
    }

    #[test]
    fn bad_txn_ids_are_refused() {
        assert!(check_txn_id("t-1").is_ok());
        for bad in ["", "a b", "a\nb", &"x".repeat(201)] {
            assert!(check_txn_id(bad).is_err(), "{bad:?}");
        }
    }
}
