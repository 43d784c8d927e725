//! The per-second sampler of a run (`core::series`): a thread that reads
//! `/proc/stat`'s CPU line and the whole disks of `/proc/diskstats` once a
//! second, from the run's start to its end, and keeps each second's CPU
//! shares and disk bytes a second. Two small files a second: it costs
//! nothing a run can measure. Stops at `MAX_SAMPLES` and says so.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::read;
use crate::core::accounting::CpuSplit;
use crate::core::series::{Sample, Series, MAX_SAMPLES};

/// One reading: the CPU counters and the whole disks' (sectors read,
/// sectors written) summed; None where the file is not there.
#[derive(Debug, Clone, Copy, Default)]
struct Reading {
    cpu: Option<CpuSplit>,
    disks: Option<(u64, u64)>,
}

fn reading() -> Reading {
    let disks = read::file("/proc/diskstats")
        .map(|t| read::diskstats(&t, &read::is_physical_disk))
        .filter(|d| !d.is_empty())
        .map(|d| d.iter().fold((0, 0), |(r, w), x| (r + x.1, w + x.2)));
    Reading {
        cpu: read::file("/proc/stat").and_then(|t| read::cpu_split(&t)),
        disks,
    }
}

/// The sample between two readings `dt` seconds apart, ending `t_s` from
/// the start; None without CPU counters or time between them.
fn sample(a: &Reading, b: &Reading, t_s: f64, dt: f64) -> Option<Sample> {
    let d = read::cpu_delta(&a.cpu?, &b.cpu?);
    let total = d.total_s();
    if total <= 0.0 || dt <= 0.0 {
        return None;
    }
    let pct = |x: f64| (100.0 * x / total * 100.0).round() / 100.0;
    let rate = |x: u64, y: u64| (y.saturating_sub(x) as f64 * 512.0 / dt).round();
    let disks = a.disks.zip(b.disks);
    Some(Sample {
        t_s: (t_s * 1000.0).round() / 1000.0,
        user_pct: pct(d.user_s + d.nice_s),
        system_pct: pct(d.system_s + d.irq_s),
        iowait_pct: pct(d.iowait_s),
        steal_pct: pct(d.steal_s),
        softirq_pct: pct(d.softirq_s),
        read_bytes_per_s: disks.map(|((r0, _), (r1, _))| rate(r0, r1)),
        write_bytes_per_s: disks.map(|((_, w0), (_, w1))| rate(w0, w1)),
    })
}

/// The calling thread's CPU time so far (user and system), in seconds.
fn thread_cpu_s() -> Option<f64> {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes only the timespec it is given.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    ok.then_some(t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9)
}

/// A sampler running beside a run.
pub struct Recorder {
    stop: Sender<()>,
    thread: JoinHandle<Series>,
}

impl Recorder {
    /// Starts sampling every `interval`; None when no thread can be made
    /// (the run goes on without samples).
    pub fn start(interval: Duration) -> Option<Recorder> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("vp-samples".into())
            .spawn(move || {
                let start = Instant::now();
                let mut last = (reading(), start);
                let mut series = Series {
                    interval_s: interval.as_secs_f64(),
                    ..Series::default()
                };
                // Each wait ends at the next whole interval from the
                // start, so samples do not drift; a stop (or the run's
                // end dropping the sender) ends it at once.
                for tick in 1u32.. {
                    let next = interval * tick;
                    let wait = next.saturating_sub(start.elapsed());
                    match stopped.recv_timeout(wait) {
                        Err(RecvTimeoutError::Timeout) => {}
                        _ => break,
                    }
                    if series.samples.len() >= MAX_SAMPLES {
                        series.capped = true;
                        break;
                    }
                    let now = (reading(), Instant::now());
                    let dt = now.1.duration_since(last.1).as_secs_f64();
                    let t = now.1.duration_since(start).as_secs_f64();
                    if let Some(s) = sample(&last.0, &now.0, t, dt) {
                        series.samples.push(s);
                    }
                    last = now;
                }
                series.sampler_cpu_s = thread_cpu_s();
                series
            })
            .ok()?;
        Some(Recorder { stop, thread })
    }

    /// Stops sampling; the samples so far (a run shorter than one
    /// interval has none).
    pub fn finish(self) -> Option<Series> {
        let _ = self.stop.send(());
        self.thread.join().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_is_shares_of_all_cpus_and_sectors_as_bytes() {
        let cpu = |user: f64, idle: f64, softirq: f64| CpuSplit {
            user_s: user,
            idle_s: idle,
            softirq_s: softirq,
            ..CpuSplit::default()
        };
        let a = Reading {
            cpu: Some(cpu(10.0, 10.0, 0.0)),
            disks: Some((0, 100)),
        };
        let b = Reading {
            cpu: Some(cpu(11.0, 10.5, 0.5)),
            disks: Some((8, 2148)),
        };
        let s = sample(&a, &b, 1.0, 2.0).unwrap();
        assert_eq!((s.user_pct, s.softirq_pct, s.iowait_pct), (50.0, 25.0, 0.0));
        assert_eq!(s.read_bytes_per_s, Some(2048.0));
        assert_eq!(s.write_bytes_per_s, Some(2048.0 * 512.0 / 2.0));
        // No disks: the rates are null, not 0; no counters: no sample.
        let c = Reading { disks: None, ..b };
        assert_eq!(sample(&a, &c, 1.0, 1.0).unwrap().read_bytes_per_s, None);
        assert!(sample(&Reading::default(), &b, 1.0, 1.0).is_none());
    }

    #[test]
    fn samples_every_interval_until_stopped_and_checks_as_a_run() {
        let r = Recorder::start(Duration::from_millis(50)).unwrap();
        let spin = Instant::now();
        while spin.elapsed() < Duration::from_millis(320) {
            std::hint::black_box(0u64);
        }
        let s = r.finish().unwrap();
        // A loaded machine may delay a wake-up, never add one.
        assert!((1..=7).contains(&s.samples.len()), "{s:?}");
        assert!(!s.capped);
        assert!(s.samples.windows(2).all(|w| w[0].t_s < w[1].t_s));
        assert_eq!(s.check(spin.elapsed().as_secs_f64()), Ok(()));
        // It reports its own CPU time: some, and far less than it waited.
        let own = s.sampler_cpu_s.expect("the sampler's CPU time");
        assert!(own > 0.0 && own < 0.2, "{own}");
        // Stopped before its first interval: no samples, at once.
        let quick = Instant::now();
        let r = Recorder::start(Duration::from_secs(60)).unwrap();
        assert!(r.finish().unwrap().samples.is_empty());
        assert!(quick.elapsed() < Duration::from_secs(5));
    }
}
