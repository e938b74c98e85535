//! The agent loop: drives a [`Chat`] over the stage's tools until it stops or runs out of
//! turns.

use std::sync::Arc;

use crate::model::Chat;

/// A [`crate::model::Model`] made of any [`Chat`] and the agent loop.
#[derive(Clone, Debug)]
pub struct ChatModel {
    /// The chat client.
    pub chat: Arc<dyn Chat>,
}
