//! (area SQL: see sqlite/mod.rs)
