//! The `journal` and `command` models through the real pipeline.
