//! How the MySQL client may send the password when a server asks for it
//! in full (`caching_sha2_password` without a cached login) over a
//! connection without TLS, as libmysqlclient decides: RSA-encrypted with a
//! key the user pinned (`--mysql-server-public-key-path`, checked here
//! before use), with a key the server sends only when the user asks by an
//! option that says it is insecure (`--mysql-get-server-public-key-insecure`),
//! and otherwise not at all. A key from the server proves nothing: whoever
//! answers on that address sends their own and reads the password.

use std::path::{Path, PathBuf};

/// Where the RSA key for a full authentication comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerKey {
    /// Nowhere: the client refuses (the default).
    Refuse,
    /// A file holding the server's public key (PEM).
    Pinned(PathBuf),
    /// The server, on request: the user accepted that an impostor can
    /// read the password.
    FromServer,
}

pub const KEY_PATH_OPTION: &str = "mysql-server-public-key-path";
pub const FETCH_OPTION: &str = "mysql-get-server-public-key-insecure";

/// The largest key file read (a 16384-bit key's PEM is under 3 KiB).
const MAX_KEY_FILE: u64 = 64 << 10;
/// The smallest modulus taken: libmysqlclient's servers make 2048-bit keys.
const MIN_BITS: u64 = 2048;

impl ServerKey {
    /// From the two options; a path wins over asking the server.
    pub fn from_options(path: &str, fetch: bool) -> ServerKey {
        if !path.is_empty() {
            ServerKey::Pinned(PathBuf::from(path))
        } else if fetch {
            ServerKey::FromServer
        } else {
            ServerKey::Refuse
        }
    }

    /// The key file the `mysql` crate is given. It reads a configured key
    /// instead of asking the server and, by its documented contract,
    /// returns a failed read as the error without asking: a directory,
    /// which no read succeeds on, makes it stop there ([`is_refusal`]).
    pub fn crate_path(&self) -> Option<PathBuf> {
        match self {
            ServerKey::Refuse => Some(PathBuf::from(REFUSAL_PATH)),
            ServerKey::Pinned(p) => Some(p.clone()),
            ServerKey::FromServer => None,
        }
    }
}

/// Always a directory.
const REFUSAL_PATH: &str = "/";

/// Whether the crate's error is its read of [`REFUSAL_PATH`]: the server
/// asked for the password in full and nothing was sent.
pub fn is_refusal(e: &mysql::Error) -> bool {
    matches!(e, mysql::Error::IoError(io) if io.kind() == std::io::ErrorKind::IsADirectory)
}

/// What the refusal says: why, and the two ways on.
pub fn refusal_message() -> String {
    format!(
        "the server asked for the password in full over a connection without TLS (caching_sha2_password without a cached login, as after a restart), to be encrypted with an RSA key it would send itself, which anyone answering on that address could use to read the password; nothing was sent. Give the server's public key with --{KEY_PATH_OPTION}=FILE (its public_key.pem), connect through --mysql-socket, or, only for a server and a network you trust, --{FETCH_OPTION}=on"
    )
}

/// Checks a pinned key file before the crate reads it (the crate panics on
/// a key it cannot parse): a PEM RSA public key (PKCS#1 or SPKI) of at
/// least 2048 bits with an odd exponent above 1, large enough to encrypt a
/// password of `password_len` bytes. The error names the option.
pub fn check_pinned(path: &Path, password_len: usize) -> Result<(), String> {
    let bad = |why: &str| format!("--{KEY_PATH_OPTION}={}: {why}", path.display());
    let meta = std::fs::metadata(path).map_err(|e| bad(&format!("cannot read it: {e}")))?;
    if !meta.is_file() || meta.len() > MAX_KEY_FILE {
        return Err(bad("not a key file (a regular file of at most 64 KiB)"));
    }
    let pem = std::fs::read(path).map_err(|e| bad(&format!("cannot read it: {e}")))?;
    let (modulus, exponent) = rsa_public_key(&pem).ok_or_else(|| {
        bad("not a PEM RSA public key (BEGIN PUBLIC KEY or BEGIN RSA PUBLIC KEY); copy the server's public_key.pem")
    })?;
    let bits = bit_length(&modulus);
    if bits < MIN_BITS {
        return Err(bad(&format!(
            "a {bits}-bit key; at least {MIN_BITS} bits are needed"
        )));
    }
    if exponent.last().is_none_or(|b| b & 1 == 0) || bit_length(&exponent) < 2 {
        return Err(bad("the key's exponent is not an odd number above 1"));
    }
    // RSA-OAEP with SHA-1 (what the crate pads with) carries k - 42 bytes,
    // k the modulus in bytes as the crate counts it.
    let k = ((bits + 6) >> 3) as usize;
    if password_len + 1 > k - 42 {
        return Err(bad("the password is too long for this key"));
    }
    Ok(())
}

/// The modulus and exponent (big-endian, without leading zeros) of a PEM
/// RSA public key, as the crate finds it: PKCS#1 first, then SPKI.
fn rsa_public_key(pem: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let text = std::str::from_utf8(pem).ok()?;
    let (body, pkcs1) = pem_body(text, "RSA PUBLIC KEY")
        .map(|b| (b, true))
        .or_else(|| pem_body(text, "PUBLIC KEY").map(|b| (b, false)))?;
    let der = base64(&body)?;
    let (modulus, exponent) = rsa_der(&der, pkcs1)?;
    Some((modulus.to_vec(), exponent.to_vec()))
}

/// [`rsa_public_key`]'s DER: SPKI's bit string holds PKCS#1's sequence of
/// modulus and exponent.
fn rsa_der(der: &[u8], pkcs1: bool) -> Option<(&[u8], &[u8])> {
    let pkcs1_der = if pkcs1 {
        der
    } else {
        let (spki, rest) = tlv(der, 0x30)?;
        if !rest.is_empty() {
            return None;
        }
        let (_algorithm, rest) = tlv(spki, 0x30)?;
        let (bits, rest) = tlv(rest, 0x03)?;
        if !rest.is_empty() || bits.first() != Some(&0) {
            return None;
        }
        &bits[1..]
    };
    let (key, rest) = tlv(pkcs1_der, 0x30)?;
    if !rest.is_empty() {
        return None;
    }
    let (modulus, rest) = tlv(key, 0x02)?;
    let (exponent, rest) = tlv(rest, 0x02)?;
    if !rest.is_empty() {
        return None;
    }
    Some((strip(modulus), strip(exponent)))
}

/// The text between `-----BEGIN {label}-----` and its END line, without
/// whitespace; none where the crate's pattern (no '-' inside) would fail.
fn pem_body(text: &str, label: &str) -> Option<String> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let from = text.find(&begin)? + begin.len();
    let to = from + text[from..].find(&end)?;
    let body = &text[from..to];
    if body.contains('-') {
        return None;
    }
    Some(body.chars().filter(|c| !c.is_ascii_whitespace()).collect())
}

/// Standard base64 with padding, strictly (what the crate decodes).
fn base64(text: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes = text.as_bytes();
    if bytes.is_empty() || !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for (i, quad) in bytes.chunks(4).enumerate() {
        let last = i == bytes.len() / 4 - 1;
        let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &quad[..4 - pad] {
            n = n << 6 | digit(c)?;
        }
        n <<= 6 * pad as u32;
        let got = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&got[..3 - pad]);
    }
    Some(out)
}

/// A DER element of type `tag`: its contents and what follows it.
fn tlv(der: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&t, rest) = der.split_first()?;
    if t != tag {
        return None;
    }
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7F);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |a, &b| a << 8 | usize::from(b));
        rest = &rest[n..];
        len
    };
    (rest.len() >= len).then(|| rest.split_at(len))
}

fn strip(n: &[u8]) -> &[u8] {
    let zeros = n.iter().take_while(|&&b| b == 0).count();
    &n[zeros..]
}

/// The bits of a big-endian number without leading zero bytes.
fn bit_length(n: &[u8]) -> u64 {
    match n.first() {
        None => 0,
        Some(&top) => (n.len() as u64 - 1) * 8 + u64::from(8 - top.leading_zeros()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2048-bit public key (openssl genpkey), as SPKI and as PKCS#1.
    pub const SPKI_2048: &str = "-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAvyLL8OGbvgyn6f/KSXoC
Ot/SlUDipFxcjHm17QBC2Ng0sFYGL6Q3+GxQ8JLMuDXhThf8nljvrrOEr5ZFaRDx
nYIbB/qWIZjC9chyg+uretkbmAy9FOauNeQNSBk9HDLw+fG3JkKIDYMwH6h/qt5J
55ueMgMVamdpAH1ecoE5yUJOz/OC6cvQ904CcfKGt0rI5VDRWk5k9CyFtC9nJEKp
kO9NWUqpZkvDo5tvXUej4VbLLWXjKDhBrT86Wd6Js3p6YnDrozK/lcg88WlQqaSI
PefoFw0jmArDxyex/eZ9B49kr9mPAtpldVsGV8wVEtcDPAHP2uLKYpo4qIOO7Aej
QwIDAQAB
-----END PUBLIC KEY-----
";
    const PKCS1_2048: &str = "-----BEGIN RSA PUBLIC KEY-----
MIIBCgKCAQEAvyLL8OGbvgyn6f/KSXoCOt/SlUDipFxcjHm17QBC2Ng0sFYGL6Q3
+GxQ8JLMuDXhThf8nljvrrOEr5ZFaRDxnYIbB/qWIZjC9chyg+uretkbmAy9FOau
NeQNSBk9HDLw+fG3JkKIDYMwH6h/qt5J55ueMgMVamdpAH1ecoE5yUJOz/OC6cvQ
904CcfKGt0rI5VDRWk5k9CyFtC9nJEKpkO9NWUqpZkvDo5tvXUej4VbLLWXjKDhB
rT86Wd6Js3p6YnDrozK/lcg88WlQqaSIPefoFw0jmArDxyex/eZ9B49kr9mPAtpl
dVsGV8wVEtcDPAHP2uLKYpo4qIOO7AejQwIDAQAB
-----END RSA PUBLIC KEY-----
";
    /// A 1024-bit key: too weak.
    const SPKI_1024: &str = "-----BEGIN PUBLIC KEY-----
MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQCzydpYw7iEjwQEK98d3SfaiI51
FjXkixYQszqsBgWg6j+m35jX54aGsR9WX/HHEhgxAG0xjIxISZORaPV8Q2lq/ihN
tIz9xN6fIYb61IAsrerCPg3qaUpkxOIlRg1WnZATJxNSgEDzUon2v4XyxfpxLhpy
BoNJxGgczCs0zxtSLQIDAQAB
-----END PUBLIC KEY-----
";

    fn file(text: &[u8]) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    #[test]
    fn a_pinned_key_is_checked_before_the_crate_reads_it() {
        for good in [SPKI_2048, PKCS1_2048] {
            let f = file(good.as_bytes());
            assert_eq!(check_pinned(f.path(), 12), Ok(()), "{good}");
        }
        let (n, e) = rsa_public_key(SPKI_2048.as_bytes()).unwrap();
        assert_eq!((bit_length(&n), e), (2048, vec![1u8, 0, 1]));
        let refused = |text: &[u8], password_len: usize| {
            let f = file(text);
            check_pinned(f.path(), password_len).unwrap_err()
        };
        assert!(refused(SPKI_1024.as_bytes(), 8).contains("1024-bit key"));
        assert!(refused(SPKI_2048.as_bytes(), 300).contains("too long"));
        let broken = SPKI_2048.replace("QwIDAQAB", "QwIDAQA");
        for bad in [b"".as_slice(), b"hello", broken.as_bytes(), &[0xFF; 40]] {
            assert!(refused(bad, 8).contains(KEY_PATH_OPTION), "{bad:?}");
        }
        // A directory and a missing file name the option too.
        let dir = tempfile::tempdir().unwrap();
        assert!(check_pinned(dir.path(), 8)
            .unwrap_err()
            .contains(KEY_PATH_OPTION));
        let missing = dir.path().join("none.pem");
        assert!(check_pinned(&missing, 8)
            .unwrap_err()
            .contains("cannot read"));
    }

    #[test]
    fn by_default_the_crate_is_given_a_key_it_cannot_read() {
        assert_eq!(ServerKey::from_options("", false), ServerKey::Refuse);
        assert_eq!(ServerKey::from_options("", true), ServerKey::FromServer);
        assert_eq!(
            ServerKey::from_options("k.pem", true),
            ServerKey::Pinned("k.pem".into())
        );
        let path = ServerKey::Refuse.crate_path().unwrap();
        let e = std::fs::read(&path).unwrap_err();
        assert!(is_refusal(&mysql::Error::IoError(e)));
        assert_eq!(ServerKey::FromServer.crate_path(), None);
        let m = refusal_message();
        assert!(
            m.contains(KEY_PATH_OPTION) && m.contains(FETCH_OPTION),
            "{m}"
        );
    }
}
