//! What the machine says about itself: the environment fingerprint taken
//! where a run happens, the CPU-time monitors sampled around a run, and the
//! owner tags that let a run sweep what a killed one left behind, the
//! file system under a workload's files, and the kernel's tables a run fills
//! (dirty pages, connection tracking).

pub mod account;
pub mod affinity;
pub mod bounded;
pub mod conntrack;
pub mod fingerprint;
pub mod malloc;
pub mod monitor;
pub mod owner;
pub mod settle;
pub mod storage;

/// A command that starts this very binary: through `/proc/self/exe`,
/// which still works when the file was replaced or removed after this
/// process started (a rebuild during a long comparison), named as this
/// process was; else through `current_exe`.
pub fn this_binary() -> std::io::Result<std::process::Command> {
    use std::os::unix::process::CommandExt;
    let proc = std::path::Path::new("/proc/self/exe");
    if !proc.exists() {
        return Ok(std::process::Command::new(std::env::current_exe()?));
    }
    let mut cmd = std::process::Command::new(proc);
    if let Some(arg0) = std::env::args_os().next() {
        cmd.arg0(arg0);
    }
    Ok(cmd)
}
