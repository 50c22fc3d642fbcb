//! Conformance cases of the artifacts area.

use super::Case;

pub const CASES: &[Case] = cases![];
