//! Conformance cases of the conversations area.

use super::Case;

pub const CASES: &[Case] = cases![];
