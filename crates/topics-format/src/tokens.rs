//! Token counting with o200k_base.
