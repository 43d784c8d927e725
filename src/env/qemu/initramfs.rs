//! The guest's initramfs, built in-process: a cpio "newc" archive with the
//! virtperf binary as /init and the kernel modules the guest needs (resolved
//! with their dependencies from modules.dep, decompressed from .ko.xz or
//! .ko.zst), plus /modules.order telling init what to load.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

/// Modules the guest needs: PCI transport, disk, network, console.
pub const NEEDED: &[&str] = &["virtio_pci", "virtio_blk", "virtio_net", "virtio_console"];

/// A cpio newc archive being written.
#[derive(Default)]
pub struct Cpio {
    out: Vec<u8>,
    ino: u32,
}

impl Cpio {
    fn entry(&mut self, name: &str, mode: u32, data: &[u8], rdev: (u32, u32)) {
        self.ino += 1;
        let header = format!(
            "070701{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}",
            self.ino,
            mode,
            0,
            0,
            1,
            0,
            data.len(),
            0,
            0,
            rdev.0,
            rdev.1,
            name.len() + 1,
            0
        );
        self.out.extend_from_slice(header.as_bytes());
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(0);
        self.pad();
        self.out.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while !self.out.len().is_multiple_of(4) {
            self.out.push(0);
        }
    }

    pub fn dir(&mut self, name: &str) {
        self.entry(name, 0o040755, &[], (0, 0));
    }

    pub fn file(&mut self, name: &str, mode: u32, data: &[u8]) {
        self.entry(name, 0o100000 | mode, data, (0, 0));
    }

    pub fn char_device(&mut self, name: &str, major: u32, minor: u32) {
        self.entry(name, 0o020600, &[], (major, minor));
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, &[], (0, 0));
        self.out
    }
}

fn module_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let base = file.split(".ko").next().unwrap_or(file);
    base.replace('-', "_")
}

/// The modules in `wanted` and everything they depend on, dependencies
/// first, as paths relative to the modules directory. Modules that are not
/// in modules.dep are taken to be built into the kernel.
pub fn resolve(modules_dep: &str, wanted: &[&str]) -> Vec<String> {
    let mut deps: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    for line in modules_dep.lines() {
        let Some((path, rest)) = line.split_once(':') else {
            continue;
        };
        let list = rest.split_whitespace().map(String::from).collect();
        deps.insert(module_name(path), (path.to_string(), list));
    }
    let mut order = Vec::new();
    fn visit(name: &str, deps: &BTreeMap<String, (String, Vec<String>)>, order: &mut Vec<String>) {
        let Some((path, list)) = deps.get(name) else {
            return;
        };
        if order.contains(path) {
            return;
        }
        for d in list {
            visit(&module_name(d), deps, order);
        }
        if !order.contains(path) {
            order.push(path.clone());
        }
    }
    for w in wanted {
        visit(w, &deps, &mut order);
    }
    order
}

/// A module file's bytes, decompressed if it is .ko.xz or .ko.zst.
pub fn read_module(path: &Path) -> Result<Vec<u8>> {
    let raw = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let name = path.to_string_lossy();
    if name.ends_with(".ko.xz") {
        let mut out = Vec::new();
        lzma_rs::xz_decompress(&mut raw.as_slice(), &mut out)
            .map_err(|e| anyhow!("decompressing {}: {e:?}", path.display()))?;
        Ok(out)
    } else if name.ends_with(".ko.zst") {
        let mut out = Vec::new();
        ruzstd::decoding::StreamingDecoder::new(raw.as_slice())
            .map_err(|e| anyhow!("decompressing {}: {e}", path.display()))?
            .read_to_end(&mut out)?;
        Ok(out)
    } else if name.ends_with(".ko") {
        Ok(raw)
    } else {
        bail!(
            "{}: not a kernel module (.ko, .ko.xz, .ko.zst)",
            path.display()
        )
    }
}

/// The whole initramfs for `binary` with the modules from `modules_dir`.
pub fn build(binary: &[u8], modules_dir: &Path) -> Result<Vec<u8>> {
    build_with(binary, modules_dir, &[])
}

/// As `build`, with `extra` modules beyond `NEEDED` (another disk bus's or
/// NIC's driver).
pub fn build_with(binary: &[u8], modules_dir: &Path, extra: &[&str]) -> Result<Vec<u8>> {
    let dep_path = modules_dir.join("modules.dep");
    let dep = std::fs::read_to_string(&dep_path).with_context(|| {
        format!(
            "reading {}: give the guest kernel's modules with modules=DIR",
            dep_path.display()
        )
    })?;
    let mut cpio = Cpio::default();
    for d in ["dev", "proc", "sys", "scratch", "modules"] {
        cpio.dir(d);
    }
    cpio.char_device("dev/console", 5, 1);
    cpio.file("init", 0o755, binary);
    let mut order = String::new();
    let wanted: Vec<&str> = NEEDED.iter().chain(extra).copied().collect();
    for (i, rel) in resolve(&dep, &wanted).iter().enumerate() {
        let data = read_module(&modules_dir.join(rel))?;
        let name = format!("modules/{i:02}-{}.ko", module_name(rel));
        cpio.file(&name, 0o644, &data);
        order.push_str(&format!("/{name}\n"));
    }
    cpio.file("modules.order", 0o644, order.as_bytes());
    Ok(cpio.finish())
}

/// Whether the kernel of `modules_dir` has driver `module`, as a module
/// (modules.dep) or built in (modules.builtin).
pub fn has_module(modules_dir: &Path, module: &str) -> bool {
    ["modules.dep", "modules.builtin"].iter().any(|f| {
        std::fs::read_to_string(modules_dir.join(f)).is_ok_and(|text| {
            text.lines()
                .filter_map(|l| l.split(':').next())
                .any(|path| module_name(path) == module)
        })
    })
}

/// The guest kernel and its modules directory as the `kernel=` and
/// `modules=` options give them (modules from the kernel's version when
/// only `kernel=` is given), else the newest under /boot.
pub fn kernel_and_modules(
    kernel: Option<&str>,
    modules: Option<&str>,
) -> Result<(PathBuf, PathBuf)> {
    let (kernel, modules) = match (kernel, modules) {
        (Some(k), Some(m)) => (PathBuf::from(k), PathBuf::from(m)),
        (Some(k), None) => {
            let version = Path::new(k)
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("vmlinuz-"))
                .ok_or_else(|| {
                    anyhow!("kernel={k}: give its modules directory with modules=DIR")
                })?;
            (PathBuf::from(k), Path::new("/lib/modules").join(version))
        }
        _ => find_kernel()?,
    };
    if !kernel.exists() {
        bail!("kernel={}: no such file", kernel.display());
    }
    Ok((kernel, modules))
}

/// The newest guest kernel under /boot with its modules directory.
pub fn find_kernel() -> Result<(PathBuf, PathBuf)> {
    let mut kernels: Vec<(String, PathBuf)> = std::fs::read_dir("/boot")
        .context("reading /boot")?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let version = name.strip_prefix("vmlinuz-")?.to_string();
            Some((version, e.path()))
        })
        .filter(|(v, _)| {
            Path::new("/lib/modules")
                .join(v)
                .join("modules.dep")
                .exists()
        })
        .collect();
    kernels.sort();
    let (version, path) = kernels.pop().ok_or_else(|| {
        anyhow!("no guest kernel found: install linux-image-cloud-amd64, or give kernel=PATH and modules=DIR")
    })?;
    Ok((path, Path::new("/lib/modules").join(version)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEP: &str = "kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_ring.ko:
kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_legacy_dev.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_pci_legacy_dev.ko:
kernel/drivers/block/virtio_blk.ko.zst: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/net/core/failover.ko:
";

    #[test]
    fn dependencies_come_first_and_once() {
        let order = resolve(DEP, &["virtio_pci", "virtio_blk", "not_a_module"]);
        assert_eq!(
            order,
            vec![
                "kernel/drivers/virtio/virtio_pci_legacy_dev.ko",
                "kernel/drivers/virtio/virtio_ring.ko",
                "kernel/drivers/virtio/virtio.ko",
                "kernel/drivers/virtio/virtio_pci.ko",
                "kernel/drivers/block/virtio_blk.ko.zst",
            ]
        );
    }

    #[test]
    fn cpio_entries_are_aligned_and_terminated() {
        let mut c = Cpio::default();
        c.dir("dev");
        c.file("init", 0o755, b"abc");
        let out = c.finish();
        assert_eq!(out.len() % 4, 0);
        assert!(out.starts_with(b"070701"));
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains("TRAILER!!!"));
        assert!(text.contains("init"));
    }

    #[test]
    fn decompresses_zstd_and_xz_modules() {
        let dir = tempfile::tempdir().unwrap();
        let payload = b"\x7fELF pretend module".repeat(50);
        let zst = dir.path().join("m.ko.zst");
        std::fs::write(
            &zst,
            ruzstd::encoding::compress_to_vec(
                &payload[..],
                ruzstd::encoding::CompressionLevel::Fastest,
            ),
        )
        .unwrap();
        assert_eq!(read_module(&zst).unwrap(), payload);
        let xz = dir.path().join("m.ko.xz");
        let mut packed = Vec::new();
        lzma_rs::xz_compress(&mut &payload[..], &mut packed).unwrap();
        std::fs::write(&xz, packed).unwrap();
        assert_eq!(read_module(&xz).unwrap(), payload);
    }
}
