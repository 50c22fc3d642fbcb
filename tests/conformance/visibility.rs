//! Conformance cases of the visibility area.

use super::Case;

pub const CASES: &[Case] = cases![];
