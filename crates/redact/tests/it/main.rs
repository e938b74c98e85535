//! Integration tests of the redactor: the planted secrets, `<private>` spans, the owner's
//! configuration, and the properties (idempotence, nothing planted survives).

mod fake;
mod ordinary;
mod owner;
mod planted;
mod private;
mod props;
