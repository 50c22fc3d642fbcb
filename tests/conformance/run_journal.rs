//! Conformance cases of the run journal area.

use super::Case;

pub const CASES: &[Case] = cases![];
