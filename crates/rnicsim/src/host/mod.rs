//! Hosts: the applications that drive the NICs ([`apps`]) and the workload inputs they read
//! (flow-size CDFs, flow files).

pub mod apps;
pub mod cdf;
pub mod flow_file;
