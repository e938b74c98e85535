//! Importer tests on small hand-written transcripts.
