//! The environment fingerprint taken from inside: CPU model and hypervisor
//! signature (CPUID), kernel, memory, cgroup limits, clocksource and the
//! checksum of this very binary.

use std::fs;

use sha2::{Digest, Sha256};

use crate::core::result::{Cgroup, EnvInfo, NetInterface};

/// Takes the fingerprint of the environment this process runs in.
pub fn take(name: &str, kind: &str) -> EnvInfo {
    EnvInfo {
        name: name.to_string(),
        kind: kind.to_string(),
        hypervisor: hypervisor_signature().unwrap_or_else(|| "none".to_string()),
        kernel: read_trim("/proc/sys/kernel/osrelease").unwrap_or_default(),
        cpu_model: cpu_model(),
        cpus: online_cpus(),
        memory_bytes: mem_total(),
        cgroup: cgroup_limits(),
        clocksource: read_trim("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default(),
        virtperf_version: env!("CARGO_PKG_VERSION").to_string(),
        binary_sha256: binary_sha256().unwrap_or_default(),
        ready_s: None,
        linalg_isa: Some(linalg_isa().to_string()),
        net: net_interfaces(),
        start_at: None,
        net_path: None,
        storage: None,
        boot: boot(),
        instances: None,
        reboot: None,
        settings: Default::default(),
        imported: None,
    }
}

/// `BOOT_ID@HOSTNAME`: which boot of which (virtual) machine this is.
fn boot() -> Option<String> {
    let id = read_trim("/proc/sys/kernel/random/boot_id")?;
    let host = read_trim("/proc/sys/kernel/hostname").unwrap_or_default();
    Some(format!("{id}@{host}"))
}

/// IPv4 interfaces other than loopback, from getifaddrs(3).
pub fn net_interfaces() -> Vec<NetInterface> {
    let mut out = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list we walk read-only and free once.
    unsafe {
        if libc::getifaddrs(&mut list) != 0 {
            return out;
        }
        let mut cur = list;
        while !cur.is_null() {
            let ifa = &*cur;
            cur = ifa.ifa_next;
            if ifa.ifa_addr.is_null()
                || i32::from((*ifa.ifa_addr).sa_family) != libc::AF_INET
                || ifa.ifa_flags & libc::IFF_LOOPBACK as u32 != 0
            {
                continue;
            }
            let v4 = |sa: *const libc::sockaddr| {
                let sin = &*(sa as *const libc::sockaddr_in);
                std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr))
            };
            let prefix = if ifa.ifa_netmask.is_null() {
                32
            } else {
                u32::from(v4(ifa.ifa_netmask)).count_ones()
            };
            out.push(NetInterface {
                name: std::ffi::CStr::from_ptr(ifa.ifa_name)
                    .to_string_lossy()
                    .into_owned(),
                ipv4: format!("{}/{prefix}", v4(ifa.ifa_addr)),
            });
        }
        libc::freeifaddrs(list);
    }
    out
}

fn read_trim(path: &str) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// The 12-byte vendor signature of CPUID leaf 0x40000000 (KVMKVMKVM,
/// VMwareVMware, Microsoft Hv, XenVMMXenVMM, TCGTCGTCGTCG, ...), present only
/// when CPUID.1:ECX bit 31 says a hypervisor is there.
pub fn hypervisor_signature() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        let leaf1 = __cpuid(1);
        if leaf1.ecx & (1 << 31) == 0 {
            return None;
        }
        // Hypervisor leaves read as zero where absent.
        let hv = __cpuid(0x4000_0000);
        let bytes: Vec<u8> = [hv.ebx, hv.ecx, hv.edx]
            .iter()
            .flat_map(|r| r.to_le_bytes())
            .collect();
        let sig: String = String::from_utf8_lossy(&bytes)
            .trim_matches(char::from(0))
            .to_string();
        Some(if sig.is_empty() {
            "unknown".to_string()
        } else {
            sig
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// The name a reader knows for a CPUID hypervisor signature (KVM for
/// `KVMKVMKVM`); an unknown signature is shown as it is.
pub fn hypervisor_name(signature: &str) -> &str {
    match signature {
        "KVMKVMKVM" => "KVM",
        "TCGTCGTCGTCG" => "QEMU TCG",
        "Microsoft Hv" => "Hyper-V",
        "VMwareVMware" => "VMware",
        "XenVMMXenVMM" => "Xen",
        "VBoxVBoxVBox" => "VirtualBox",
        "bhyve bhyve" => "bhyve",
        "ACRNACRNACRN" => "ACRN",
        "prl hyperv" | "lrpepyh  vr" => "Parallels",
        other => other,
    }
}

fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default()
}

/// CPUs this process may run on (respects cpusets).
pub fn online_cpus() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

/// CPUs this process can keep busy: its CPU set, capped by a cgroup CPU
/// quota rounded up (a container given 0.5 CPU gets one thread).
pub fn usable_cpus() -> u32 {
    let cpus = online_cpus().max(1);
    match cgroup_limits().cpu_quota {
        Some(q) if q > 0.0 => cpus.min(q.ceil() as u32).max(1),
        _ => cpus,
    }
}

/// The instruction set faer's matrix kernels choose on this CPU, detected
/// at run time as faer itself does: AVX-512F, else AVX2 with FMA, else the
/// x86-64 baseline SSE2.
pub fn linalg_isa() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            "avx512"
        } else if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
        {
            "avx2+fma"
        } else {
            "sse2"
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    "generic"
}

/// The memory this process may use: the smaller of MemTotal and the
/// cgroup's limit; `None` if neither can be read.
pub fn memory_limit() -> Option<u64> {
    let total = Some(mem_total()).filter(|&m| m > 0);
    match (total, cgroup_limits().memory_limit) {
        (Some(t), Some(c)) => Some(t.min(c)),
        (t, c) => t.or(c),
    }
}

fn mem_total() -> u64 {
    fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

/// CPU quota and memory limit from cgroup v2 (or v1).
pub fn cgroup_limits() -> Cgroup {
    let mut limits = Cgroup::default();
    if let Some(max) = read_trim("/sys/fs/cgroup/cpu.max") {
        let mut parts = max.split_whitespace();
        if let (Some(quota), Some(period)) = (parts.next(), parts.next()) {
            if let (Ok(q), Ok(p)) = (quota.parse::<f64>(), period.parse::<f64>()) {
                limits.cpu_quota = Some(q / p);
            }
        }
    } else if let (Some(q), Some(p)) = (
        read_trim("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
        read_trim("/sys/fs/cgroup/cpu/cpu.cfs_period_us"),
    ) {
        if let (Ok(q), Ok(p)) = (q.parse::<f64>(), p.parse::<f64>()) {
            if q > 0.0 {
                limits.cpu_quota = Some(q / p);
            }
        }
    }
    let mem = read_trim("/sys/fs/cgroup/memory.max")
        .or_else(|| read_trim("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
    if let Some(m) = mem {
        // v1 reports "no limit" as a huge page-aligned number.
        limits.memory_limit = m.parse::<u64>().ok().filter(|&v| v < (1u64 << 60));
    }
    limits
}

/// SHA-256 of the running executable, hex.
pub fn binary_sha256() -> Option<String> {
    // Hashed once per process, streamed: the binary is tens of MiB.
    static SHA: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    SHA.get_or_init(|| {
        use std::io::Read;
        let mut f = fs::File::open("/proc/self/exe").ok()?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 256 << 10];
        loop {
            match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => hasher.update(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
        Some(
            hasher
                .finalize()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        )
    })
    .clone()
}

#[cfg(test)]
mod tests {
    #[test]
    fn hypervisor_signatures_read_as_names() {
        assert_eq!(super::hypervisor_name("KVMKVMKVM"), "KVM");
        assert_eq!(super::hypervisor_name("TCGTCGTCGTCG"), "QEMU TCG");
        assert_eq!(super::hypervisor_name("none"), "none");
        assert_eq!(super::hypervisor_name("NewHV"), "NewHV");
    }

    use super::*;

    #[test]
    fn fingerprint_describes_this_machine() {
        let env = take("host", "host");
        assert!(env.cpus >= 1);
        assert!(env.memory_bytes > 0);
        assert!(!env.kernel.is_empty());
        assert_eq!(env.binary_sha256.len(), 64);
        assert!(!env.hypervisor.is_empty());
        assert!(["avx512", "avx2+fma", "sse2"].contains(&env.linalg_isa.as_deref().unwrap()));
        assert!(memory_limit().unwrap() <= env.memory_bytes);
    }

    #[test]
    fn documents_without_the_isa_still_parse() {
        let mut env = serde_json::to_value(take("host", "host")).unwrap();
        env.as_object_mut().unwrap().remove("linalg_isa");
        let back: EnvInfo = serde_json::from_value(env).unwrap();
        assert_eq!(back.linalg_isa, None);
    }
}
