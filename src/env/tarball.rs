//! The root file system of an agent's image as a tar archive: the static
//! binary and an empty `/work`, written here (POSIX ustar) so an engine can
//! import it with no registry and no tar tool.

/// One entry of a POSIX (ustar) tar archive: a regular file, or a directory
/// when `data` is `None`.
fn tar_entry(out: &mut Vec<u8>, name: &str, mode: u32, data: Option<&[u8]>) {
    let mut header = [0u8; 512];
    header[..name.len()].copy_from_slice(name.as_bytes());
    let octal = |field: &mut [u8], value: u64| {
        let text = format!("{:0width$o}\0", value, width = field.len() - 1);
        field.copy_from_slice(text.as_bytes());
    };
    let size = data.map_or(0, <[u8]>::len);
    octal(&mut header[100..108], mode as u64);
    octal(&mut header[108..116], 0);
    octal(&mut header[116..124], 0);
    octal(&mut header[124..136], size as u64);
    octal(&mut header[136..148], 0);
    header[156] = if data.is_some() { b'0' } else { b'5' };
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|&b| b as u32).sum();
    let text = format!("{sum:06o}\0 ");
    header[148..156].copy_from_slice(text.as_bytes());
    out.extend_from_slice(&header);
    if let Some(data) = data {
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
}

/// The image's root file system as a tar archive: the executable `/virtperf`
/// and an empty, world-writable `/work` for the file tests (Podman, unlike
/// Docker, does not create a missing `--workdir`).
pub fn agent_tar(binary: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(binary.len() + 3 * 512 + 1024);
    tar_entry(&mut out, "work/", 0o1777, None);
    tar_entry(&mut out, "virtperf", 0o755, Some(binary));
    out.extend_from_slice(&[0u8; 1024]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tarball_has_a_valid_header_and_padding() {
        let tar = agent_tar(b"hello");
        assert_eq!(tar.len() % 512, 0);
        // The directory entry first, then the file with its data.
        assert_eq!(&tar[..5], b"work/");
        assert_eq!(tar[156], b'5');
        assert_eq!(&tar[100..107], b"0001777");
        let file = &tar[512..];
        assert_eq!(&file[..8], b"virtperf");
        assert_eq!(file[156], b'0');
        assert_eq!(&file[257..262], b"ustar");
        assert_eq!(&file[512..517], b"hello");
        assert_eq!(tar.len(), 512 + 512 + 512 + 1024);
        // Checksums: the sum of each header with the checksum field as spaces.
        for h in [&tar[..512], &file[..512]] {
            let mut h = h.to_vec();
            let stored =
                u32::from_str_radix(std::str::from_utf8(&h[148..154]).unwrap(), 8).unwrap();
            h[148..156].copy_from_slice(b"        ");
            assert_eq!(stored, h.iter().map(|&b| b as u32).sum::<u32>());
        }
    }
}
