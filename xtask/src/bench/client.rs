// Latency statistics are floating point by nature; no money here.
#![allow(clippy::float_arithmetic, clippy::as_conversions, clippy::cast_precision_loss)]

//! The benchmarks' load generator: keep-alive connections that each send the next request when
//! the previous answer arrived (a closed loop), with latencies and errors per phase; and the
//! server's memory from `/proc`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Called with each successful answer's body.
pub type OnBody = Arc<dyn Fn(&[u8]) + Send + Sync>;
/// Builds request `i` of connection `c`.
pub type MakeRequest = Arc<dyn Fn(usize, usize) -> Vec<u8> + Send + Sync>;

/// One measured phase.
pub struct Phase {
    pub name: &'static str,
    pub requests: usize,
    pub errors: usize,
    pub elapsed: Duration,
    pub latencies_us: Vec<u64>,
}

impl Phase {
    pub fn rps(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }

    pub fn percentile(&self, p: f64) -> f64 {
        percentile_ms(&self.latencies_us, p)
    }
}

/// The `p` percentile in milliseconds of sorted latencies in microseconds (0 when empty).
pub fn percentile_ms(sorted_us: &[u64], p: f64) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    let idx = ((sorted_us.len() as f64 - 1.0) * p).round() as usize;
    sorted_us[idx] as f64 / 1000.0
}

/// Sends one request on a keep-alive connection and reads the whole answer; returns the status
/// and body.
pub fn exchange(stream: &mut BufReader<TcpStream>, request: &[u8]) -> Result<(u16, Vec<u8>), String> {
    stream.get_mut().write_all(request).map_err(|e| e.to_string())?;
    let mut line = String::new();
    stream.read_line(&mut line).map_err(|e| e.to_string())?;
    let status: u16 = line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or("bad status line")?;
    let mut length = 0usize;
    loop {
        line.clear();
        stream.read_line(&mut line).map_err(|e| e.to_string())?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().map_err(|_| "bad length")?;
        }
    }
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).map_err(|e| e.to_string())?;
    Ok((status, body))
}

pub fn connect(addr: &str) -> Result<BufReader<TcpStream>, String> {
    let s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    Ok(BufReader::new(s))
}

/// Runs `make_request(connection, i)` from `connections` threads for `seconds`.
pub fn load(
    name: &'static str,
    addr: &str,
    connections: usize,
    seconds: u64,
    make_request: MakeRequest,
    expect: u16,
    on_body: OnBody,
) -> Result<Phase, String> {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let next: Next = Arc::new(move |own| (Instant::now() < deadline).then_some(own));
    drive(name, addr, connections, next, (make_request, expect, on_body))
}

/// Runs requests `0..total` once each, from `connections` threads taking the next one as they
/// finish (`make_request(connection, i)` with `i` the request's number across threads).
pub fn load_count(
    name: &'static str,
    addr: &str,
    connections: usize,
    total: usize,
    make_request: MakeRequest,
    expect: u16,
    on_body: OnBody,
) -> Result<Phase, String> {
    let taken = Arc::new(AtomicUsize::new(0));
    let next: Next = Arc::new(move |_| Some(taken.fetch_add(1, Ordering::Relaxed)).filter(|i| *i < total));
    drive(name, addr, connections, next, (make_request, expect, on_body))
}

/// The number of a thread's next request, given how many it sent; `None` ends the thread.
type Next = Arc<dyn Fn(usize) -> Option<usize> + Send + Sync>;

fn drive(
    name: &'static str,
    addr: &str,
    connections: usize,
    next: Next,
    (make_request, expect, on_body): (MakeRequest, u16, OnBody),
) -> Result<Phase, String> {
    let errors = Arc::new(AtomicUsize::new(0));
    let all = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let mut threads = Vec::new();
    for c in 0..connections {
        let addr = addr.to_owned();
        let errors = errors.clone();
        let all = all.clone();
        let make_request = make_request.clone();
        let on_body = on_body.clone();
        let next = next.clone();
        threads.push(std::thread::spawn(move || {
            let mut lat = Vec::with_capacity(100_000);
            let Ok(mut conn) = connect(&addr) else {
                errors.fetch_add(1, Ordering::Relaxed);
                return;
            };
            let mut sent = 0;
            while let Some(i) = next(sent) {
                let req = make_request(c, i);
                let t = Instant::now();
                match exchange(&mut conn, &req) {
                    Ok((status, body)) if status == expect => {
                        lat.push(u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX));
                        on_body(&body);
                    }
                    Ok(_) => {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => {
                        errors.fetch_add(1, Ordering::Relaxed);
                        match connect(&addr) {
                            Ok(c) => conn = c,
                            Err(_) => break,
                        }
                    }
                }
                sent += 1;
            }
            if let Ok(mut a) = all.lock() {
                a.extend(lat);
            }
        }));
    }
    for t in threads {
        let _ = t.join();
    }
    let elapsed = start.elapsed();
    let mut latencies_us = std::mem::take(&mut *all.lock().map_err(|_| "poisoned")?);
    latencies_us.sort_unstable();
    Ok(Phase { name, requests: latencies_us.len(), errors: errors.load(Ordering::Relaxed), elapsed, latencies_us })
}

/// The process's resident memory now and at its peak, in MiB.
pub fn peak_rss_mib(pid: u32) -> Option<(f64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = |key: &str| -> Option<f64> {
        status.lines().find(|l| l.starts_with(key))?.split_whitespace().nth(1)?.parse::<f64>().ok()
    };
    Some((kb("VmRSS:")? / 1024.0, kb("VmHWM:")? / 1024.0))
}

/// User + system CPU seconds of process `pid` so far.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) : state is field 3; utime 14, stime 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i - 3)?.parse::<f64>().ok();
    // The kernel's USER_HZ is 100 on Linux.
    Some((ticks(14)? + ticks(15)?) / 100.0)
}
