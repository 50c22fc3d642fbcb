//! (area module: see model/mod.rs)
