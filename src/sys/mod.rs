//! What the machine says about itself: the environment fingerprint taken
//! where a run happens, the CPU-time monitors sampled around a run, and the
//! owner tags that let a run sweep what a killed one left behind, and the
//! file system under a workload's files.

pub mod bounded;
pub mod fingerprint;
pub mod malloc;
pub mod monitor;
pub mod owner;
pub mod settle;
pub mod storage;
