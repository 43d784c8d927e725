//! A network namespace of virtperf's own with a veth pair to the host, as a
//! container engine's bridge gives a container: the host end holds the
//! first address of a /30 in 10.213.0.0/16 and the inside end the second,
//! with the default route through the host. Sandboxes that have no engine
//! to do this (gVisor's runsc over a bundle of virtperf's) run in one. The
//! namespace is named after its owner, so what a killed run left is swept
//! by the next (deleting a namespace deletes its veth pair).

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::sys::bounded::{run_bounded, run_cleanup, Limits};
use crate::sys::owner::{self, Owner};

/// Where `ip netns` keeps its named namespaces.
const NETNS_DIR: &str = "/run/netns";

/// How long one `ip` command may take.
const IP_TIMEOUT: Duration = Duration::from_secs(20);

/// One namespace with its veth pair; deleted on drop.
pub struct VethNamespace {
    pub name: String,
    /// The host's end of the pair and its address: where a server on the
    /// host listens for this namespace's clients.
    pub host_ip: Ipv4Addr,
    /// The address inside.
    pub inside_ip: Ipv4Addr,
}

/// Runs `ip ARGS`; the error carries its stderr.
fn ip(args: &[&str]) -> Result<()> {
    let mut cmd = Command::new("ip");
    cmd.args(args);
    let out = run_bounded(cmd, None, Limits::new(IP_TIMEOUT))
        .map_err(|e| anyhow::anyhow!("`ip {}` failed: {e:?}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// The /30 blocks of 10.213.0.0/16 in use on the host, by their first address.
fn blocks_in_use() -> Vec<u32> {
    let mut cmd = Command::new("ip");
    cmd.args(["-o", "-4", "addr", "show"]);
    let Ok(out) = run_bounded(cmd, None, Limits::new(IP_TIMEOUT)) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| w.split('/').next()?.parse::<Ipv4Addr>().ok())
        .map(|a| u32::from(a) & !3)
        .collect()
}

/// A free /30 block's first address, starting from one chosen by `seed`
/// (this process and instance), so that runs side by side rarely meet.
fn free_block(seed: u32) -> Result<u32> {
    let base = u32::from(Ipv4Addr::new(10, 213, 0, 0));
    let used = blocks_in_use();
    for step in 0..16384 {
        let block = base + ((seed + step) % 16384) * 4;
        if !used.contains(&block) {
            return Ok(block);
        }
    }
    bail!("no free /30 left in 10.213.0.0/16 for a veth pair")
}

impl VethNamespace {
    /// Makes namespace `PREFIX<owner>-<index>` with its veth pair, after
    /// sweeping those of dead owners.
    pub fn create(prefix: &str, index: usize) -> Result<VethNamespace> {
        sweep(prefix);
        let tag = Owner::me().map(Owner::tag).unwrap_or_default();
        let name = format!("{prefix}{tag}-{index}");
        let pid = std::process::id();
        let block = free_block(pid.wrapping_mul(8).wrapping_add(index as u32))?;
        let host_ip = Ipv4Addr::from(block + 1);
        let inside_ip = Ipv4Addr::from(block + 2);
        ip(&["netns", "add", &name]).context("making a network namespace (needs root)")?;
        let ns = VethNamespace {
            name,
            host_ip,
            inside_ip,
        };
        // Interface names have at most 15 bytes: `vp` + pid in hex + index.
        let host_end = format!("vp{pid:x}x{index}h");
        let inside_end = format!("vp{pid:x}x{index}c");
        let host_cidr = format!("{host_ip}/30");
        let inside_cidr = format!("{inside_ip}/30");
        let gateway = host_ip.to_string();
        let n = ns.name.as_str();
        ip(&[
            "link",
            "add",
            &host_end,
            "type",
            "veth",
            "peer",
            "name",
            &inside_end,
        ])?;
        // From here the pair goes with the namespace (on drop).
        let moved = ip(&["link", "set", &inside_end, "netns", n]);
        if moved.is_err() {
            let _ = ip(&["link", "del", &host_end]);
        }
        moved?;
        ip(&["addr", "add", &host_cidr, "dev", &host_end])?;
        ip(&["link", "set", &host_end, "up"])?;
        ip(&["-n", n, "addr", "add", &inside_cidr, "dev", &inside_end])?;
        ip(&["-n", n, "link", "set", &inside_end, "up"])?;
        ip(&["-n", n, "link", "set", "lo", "up"])?;
        ip(&["-n", n, "route", "add", "default", "via", &gateway])?;
        Ok(ns)
    }

    /// The namespace's file, which `setns` joins.
    pub fn path(&self) -> PathBuf {
        PathBuf::from(NETNS_DIR).join(&self.name)
    }
}

/// Deletes namespace `name` (and so its veth pair); runs to its end also
/// after an interrupt, as cleanup must.
fn delete(name: &str) -> bool {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "del", name]);
    run_cleanup(cmd, IP_TIMEOUT)
}

impl Drop for VethNamespace {
    fn drop(&mut self) {
        delete(&self.name);
    }
}

/// Deletes the namespaces named `PREFIX<owner>-...` whose owner is dead (a
/// run killed before its cleanup); returns how many went.
pub fn sweep(prefix: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(NETNS_DIR) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        let dead = owner::in_name(name, prefix).is_some_and(|o| o.is_dead());
        if dead && delete(name) {
            removed += 1;
        }
    }
    removed
}

/// Makes the process about to be spawned by `cmd` join namespace `path`.
pub fn join_in_child(cmd: &mut Command, path: PathBuf) -> Result<()> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let file = std::fs::File::open(&path)
        .with_context(|| format!("opening network namespace {}", path.display()))?;
    // SAFETY: between fork and exec only setns, async-signal-safe, runs;
    // the file stays open in the closure until the command is dropped.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}
