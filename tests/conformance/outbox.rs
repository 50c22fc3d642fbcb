//! Conformance cases of the outbox area.

use super::Case;

pub const CASES: &[Case] = cases![];
