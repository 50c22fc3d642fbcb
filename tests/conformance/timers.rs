//! Conformance cases of the timers area.

use super::Case;

pub const CASES: &[Case] = cases![];
