//! Conformance cases of the namespaces area.

use super::Case;

pub const CASES: &[Case] = cases![];
