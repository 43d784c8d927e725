//! The OCI runtime of a docker or podman container (`runtime=runc|crun|
//! runsc`, or for Podman a runtime's path). Before anything runs, the
//! engine must know the runtime (where it does not, the refusal says how to
//! register it: virtperf never edits an engine's configuration) and a
//! trivial container must start with it, its refusal (crun 1.8 on a
//! cgroup v1 or hybrid host, say) given as the reason. The runtime's name
//! and version go into the fingerprint.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Result};

use super::def::{Check, EnvOption};
use super::Spec;

pub const OPTION: EnvOption = EnvOption::new(
    "runtime",
    Check::Text,
    "the OCI runtime: runc, crun, runsc... (a name the engine knows; podman also takes a path)",
);

/// The runtime a spec asks for.
pub fn asked(spec: &Spec) -> Option<&str> {
    spec.opt(OPTION.key)
}

/// Podman's global options for it (Podman chooses the runtime before the
/// command).
pub fn global_args(cli: &str, spec: &Spec) -> Vec<String> {
    match asked(spec) {
        Some(r) if cli == "podman" => vec!["--runtime".into(), r.into()],
        _ => Vec::new(),
    }
}

/// Docker's options of `run` for it.
pub fn run_args(cli: &str, spec: &Spec) -> Vec<String> {
    match asked(spec) {
        Some(r) if cli == "docker" => vec!["--runtime".into(), r.into()],
        _ => Vec::new(),
    }
}

/// The last lines of an engine's complaint, for a message.
fn complaint(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" / ")
}

type Engine<'a> = &'a dyn Fn(&[&str]) -> Result<std::process::Output>;

/// Where Docker's runtime `name` is installed, or how to register it.
fn docker_runtime_path(engine: Engine, spec: &Spec, name: &str) -> Result<String> {
    let out = engine(&["info", "--format", "{{json .Runtimes}}"])?;
    let runtimes: BTreeMap<String, serde_json::Value> =
        serde_json::from_slice(&out.stdout).unwrap_or_default();
    match runtimes.get(name) {
        Some(r) => Ok(r["path"].as_str().unwrap_or(name).to_string()),
        None => bail!(
            "--env {}: the Docker engine does not know runtime {name} (it knows {}): register it in /etc/docker/daemon.json, e.g. {{\"runtimes\": {{\"{name}\": {{\"path\": \"/usr/bin/{name}\"}}}}}}, and restart dockerd; virtperf does not edit the engine's configuration",
            spec.text,
            runtimes.keys().cloned().collect::<Vec<_>>().join(", ")
        ),
    }
}

/// The first line `PATH --version` prints.
fn version_of(path: &str) -> Option<String> {
    let mut cmd = std::process::Command::new(path);
    cmd.arg("--version");
    let out = crate::sys::bounded::run_bounded(
        cmd,
        None,
        crate::sys::bounded::Limits::new(Duration::from_secs(20)),
    )
    .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().next().map(|l| l.trim().to_string())
}

/// Starts a trivial container (`trial`: the run arguments up to and
/// including the image, after which the binary is given `--version`) with
/// the runtime `spec` asks for, or the engine's default: its refusal, in
/// the engine's last words, is the error.
pub fn trial_container(cli: &str, spec: &Spec, engine: Engine, trial: &[String]) -> Result<()> {
    let mut args: Vec<&str> = Vec::new();
    let global = global_args(cli, spec);
    args.extend(global.iter().map(String::as_str));
    args.extend(["run", "--rm"]);
    let run = run_args(cli, spec);
    args.extend(run.iter().map(String::as_str));
    args.extend(trial.iter().map(String::as_str));
    args.push("--version");
    let out = engine(&args)?;
    if !out.status.success() {
        let with = match asked(spec) {
            Some(name) => format!("runtime {name}"),
            None => format!("{cli}'s default runtime"),
        };
        bail!(
            "--env {}: a trivial container does not start with {with}: {}",
            spec.text,
            complaint(&out.stderr)
        );
    }
    Ok(())
}

/// Checks the runtime `spec` asks for: known to the engine, and a trivial
/// container (`trial`: the run arguments up to and including the image,
/// after which `--version` is given) starts with it. Returns the
/// fingerprint's settings: the runtime and its version.
pub fn check(
    cli: &str,
    spec: &Spec,
    engine: Engine,
    trial: &[String],
) -> Result<BTreeMap<String, String>> {
    let Some(name) = asked(spec) else {
        return Ok(BTreeMap::new());
    };
    let version = if cli == "docker" {
        let path = docker_runtime_path(engine, spec, name)?;
        version_of(&path)
    } else {
        let info = engine(&[
            "--runtime",
            name,
            "info",
            "--format",
            "{{.Host.OCIRuntime.Version}}",
        ])?;
        if !info.status.success() {
            bail!(
                "--env {}: Podman does not know runtime {name} ({}): add it under [engine.runtimes] in /etc/containers/containers.conf, e.g. {name} = [\"/usr/bin/{name}\"], or give its path, podman:runtime=/path/to/{name}; virtperf does not edit the engine's configuration",
                spec.text,
                complaint(&info.stderr)
            );
        }
        String::from_utf8_lossy(&info.stdout)
            .lines()
            .next()
            .map(|l| l.trim().to_string())
    };
    trial_container(cli, spec, engine, trial)?;
    let mut settings = BTreeMap::new();
    settings.insert("runtime".into(), name.to_string());
    if let Some(v) = version.filter(|v| !v.is_empty()) {
        settings.insert("runtime_version".into(), v);
    }
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn podman_takes_the_runtime_before_the_command_and_docker_in_run() {
        let spec = Spec::parse("podman:runtime=crun").unwrap();
        assert_eq!(global_args("podman", &spec), ["--runtime", "crun"]);
        assert!(run_args("podman", &spec).is_empty());
        let spec = Spec::parse("docker:runtime=runsc").unwrap();
        assert!(global_args("docker", &spec).is_empty());
        assert_eq!(run_args("docker", &spec), ["--runtime", "runsc"]);
        assert!(Spec::parse("docker:runtime=--privileged").is_err());
    }

    #[test]
    fn a_runtime_docker_does_not_know_is_refused_saying_how_to_register_it() {
        let spec = Spec::parse("docker:runtime=runsc").unwrap();
        let engine = |_: &[&str]| {
            Ok(std::process::Output {
                status: std::os::unix::process::ExitStatusExt::from_raw(0),
                stdout: br#"{"runc":{"path":"runc"}}"#.to_vec(),
                stderr: Vec::new(),
            })
        };
        let err = check("docker", &spec, &engine, &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not know runtime runsc"), "{err}");
        assert!(err.contains("daemon.json"), "{err}");
        assert!(err.contains("it knows runc"), "{err}");
    }
}
