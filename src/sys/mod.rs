//! What the machine says about itself: the environment fingerprint taken
//! where a run happens, and the CPU-time monitors sampled around a run.

pub mod fingerprint;
pub mod monitor;
