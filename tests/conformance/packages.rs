//! Conformance cases of the packages area.

use super::Case;

pub const CASES: &[Case] = cases![];
