//! Conformance cases of the effects area.

use super::Case;

pub const CASES: &[Case] = cases![];
