//! Conformance cases of the checkpoints area.

use super::Case;

pub const CASES: &[Case] = cases![];
