//! `virtperf serve`'s arguments into a typed `ServeArgs`.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use crate::core::options::{self, CliError};
use crate::workload::net::server::{ServeArgs, SERVE_OPTIONS};

/// Parses serve's arguments (without the word `serve`).
pub fn parse(args: &[String]) -> Result<ServeArgs, CliError> {
    let (v, rest) = options::parse(&[SERVE_OPTIONS], args, "serve")?;
    if let Some(extra) = rest.first() {
        return Err(CliError::Usage(format!(
            "serve takes no argument '{extra}': use --bind ADDR and --port N"
        )));
    }
    let ip: IpAddr = v.text("bind").parse().map_err(|_| CliError::InvalidValue {
        name: "bind".into(),
        value: v.text("bind").into(),
        allowed: "an IP address such as 127.0.0.1 or ::1".into(),
    })?;
    Ok(ServeArgs {
        // The option table bounds the port to 0..=65535.
        addr: SocketAddr::new(ip, v.int("port") as u16),
        secret_file: v.text_opt("secret-file").map(PathBuf::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::text::owned as s;

    #[test]
    fn serve_arguments_parse_and_bad_ones_are_named() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.addr, "127.0.0.1:12866".parse().unwrap());
        assert_eq!(a.secret_file, None);
        let a = parse(&s(&["--bind=::1", "--port", "0", "--secret-file=/s"])).unwrap();
        assert_eq!(a.addr, "[::1]:0".parse().unwrap());
        assert_eq!(a.secret_file, Some(PathBuf::from("/s")));
        let err = parse(&s(&["--bind=localhost"])).unwrap_err().to_string();
        assert!(
            err.contains("--bind") && err.contains("IP address"),
            "{err}"
        );
        let err = parse(&s(&["extra"])).unwrap_err().to_string();
        assert!(err.contains("serve takes no argument 'extra'"), "{err}");
    }
}
