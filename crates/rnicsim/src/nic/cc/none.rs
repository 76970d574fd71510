//! No congestion control: every flow sends at line rate (the baseline of lossless fabrics
//! that rely on PFC alone).

use super::{CongestionControl, FlowParams};
use crate::units::BitsPerSec;

#[derive(Clone, Debug)]
pub struct LineRate {
    rate: BitsPerSec,
}

impl LineRate {
    pub fn new(flow: FlowParams) -> LineRate {
        LineRate { rate: flow.line_rate }
    }
}

impl CongestionControl for LineRate {
    fn rate(&self) -> BitsPerSec {
        self.rate
    }
}
