//! Budgets shared by every replica through Redis: the GCRA step of
//! `stablepay_domain::ratelimit::gcra`, run atomically by a Lua script on Redis's own clock,
//! the key expiring once its budget is full again. A small RESP client over TCP (one command,
//! `EVAL`), a few pooled connections, short time limits, and a pause after a failure so a
//! Redis that is down does not slow requests (they go through: see `FailOpen`).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use stablepay_domain::Error;
use stablepay_domain::ports::RateLimiter;
use stablepay_domain::ratelimit::{Policy, Verdict};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// What both scripts start with: Redis's time in milliseconds, the policy's window and quota
/// (`ARGV[1]`, `ARGV[2]`) and the period one request takes of the window.
macro_rules! budget_prelude {
    () => {
        r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local quota = tonumber(ARGV[2])
local period = math.max(1, math.floor(window / quota))
"#
    };
}

/// The GCRA step; answers `{allowed, remaining, reset_ms, retry_after_ms}`.
const SCRIPT: &str = concat!(
    budget_prelude!(),
    r#"local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new_tat = tat + period
local allow_at = new_tat - window
if now < allow_at then
  return {0, 0, tat - now, allow_at - now}
end
redis.call('SET', KEYS[1], new_tat, 'PX', new_tat - now + 1000)
return {1, math.floor((now + window - new_tat) / period), new_tat - now, 0}
"#
);

/// Gives back one request: the arrival time moves back one period (the key goes when its
/// budget is full again).
const REFUND: &str = concat!(
    budget_prelude!(),
    r#"local tat = tonumber(redis.call('GET', KEYS[1]) or 0)
local new_tat = tat - period
if new_tat <= now then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], new_tat, 'PX', new_tat - now + 1000)
end
return {1}
"#
);

/// Connections kept for reuse.
const POOL: usize = 16;
/// The longest wait for Redis on one check.
const TIMEOUT: Duration = Duration::from_millis(250);
/// After a failure, checks fail at once for this long.
const PAUSE: Duration = Duration::from_secs(1);

pub struct RedisLimiter {
    /// `host:port`.
    address: String,
    /// Prepended to every key (one namespace per deployment).
    prefix: String,
    idle: Mutex<Vec<BufReader<TcpStream>>>,
    down_until: Mutex<Option<Instant>>,
}

impl RedisLimiter {
    /// `url` is `redis://host:port` (no credentials, database 0).
    pub fn new(url: &str, prefix: &str) -> Result<Self, String> {
        let rest = url.strip_prefix("redis://").ok_or("must start with redis://")?;
        let address = rest.trim_end_matches('/');
        if address.is_empty() || address.contains('@') || address.contains('/') {
            return Err("must be redis://host:port".into());
        }
        let address = if address.contains(':') { address.to_owned() } else { format!("{address}:6379") };
        Ok(Self { address, prefix: prefix.to_owned(), idle: Mutex::new(Vec::new()), down_until: Mutex::new(None) })
    }

    async fn eval(&self, script: &str, key: &str, window_ms: u64, quota: u32) -> Result<Vec<i64>, String> {
        let pooled = self.idle.lock().ok().and_then(|mut p| p.pop());
        let mut conn = match pooled {
            Some(c) => c,
            None => {
                let stream = TcpStream::connect(&self.address).await.map_err(|e| e.to_string())?;
                stream.set_nodelay(true).map_err(|e| e.to_string())?;
                BufReader::new(stream)
            }
        };
        let args = ["EVAL", script, "1", key, &window_ms.to_string(), &quota.to_string()];
        let mut command = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            command.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            command.extend_from_slice(a.as_bytes());
            command.extend_from_slice(b"\r\n");
        }
        conn.get_mut().write_all(&command).await.map_err(|e| e.to_string())?;
        let answer = read_integers(&mut conn).await?;
        if let Ok(mut p) = self.idle.lock()
            && p.len() < POOL
        {
            p.push(conn);
        }
        Ok(answer)
    }
}

async fn read_line(conn: &mut BufReader<TcpStream>) -> Result<String, String> {
    let mut line = String::new();
    if conn.read_line(&mut line).await.map_err(|e| e.to_string())? == 0 {
        return Err("Redis closed the connection".into());
    }
    Ok(line.trim_end().to_owned())
}

/// Reads an array of integers (or an error reply).
async fn read_integers(conn: &mut BufReader<TcpStream>) -> Result<Vec<i64>, String> {
    let head = read_line(conn).await?;
    if let Some(err) = head.strip_prefix('-') {
        return Err(format!("Redis: {err}"));
    }
    let n: usize =
        head.strip_prefix('*').and_then(|n| n.parse().ok()).ok_or_else(|| format!("unexpected reply {head}"))?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let item = read_line(conn).await?;
        out.push(item.strip_prefix(':').and_then(|v| v.parse().ok()).ok_or_else(|| format!("unexpected item {item}"))?);
    }
    Ok(out)
}

fn seconds(ms: i64) -> u32 {
    u32::try_from((ms.max(0) + 999) / 1000).unwrap_or(u32::MAX)
}

#[async_trait]
impl RateLimiter for RedisLimiter {
    async fn check(&self, policy: &Policy, key: &str) -> Result<Verdict, Error> {
        if let Ok(down) = self.down_until.lock()
            && down.is_some_and(|until| Instant::now() < until)
        {
            return Err(Error::Unavailable);
        }
        let full_key = format!("{}:{}:{}", self.prefix, policy.name, key);
        let window_ms = u64::from(policy.window_seconds) * 1000;
        let answer = tokio::time::timeout(TIMEOUT, self.eval(SCRIPT, &full_key, window_ms, policy.quota.max(1))).await;
        match answer {
            Ok(Ok(v)) if v.len() == 4 => Ok(Verdict {
                allowed: v[0] == 1,
                remaining: u32::try_from(v[1]).unwrap_or(0),
                reset_seconds: seconds(v[2]),
                retry_after_seconds: if v[0] == 1 { 0 } else { seconds(v[3]).max(1) },
            }),
            other => {
                if let Ok(mut down) = self.down_until.lock() {
                    *down = Some(Instant::now() + PAUSE);
                }
                let why = match other {
                    Ok(Ok(v)) => format!("unexpected answer {v:?}"),
                    Ok(Err(e)) => e,
                    Err(_) => format!("no answer within {TIMEOUT:?}"),
                };
                Err(Error::Internal(format!("Redis at {}: {why}", self.address)))
            }
        }
    }

    async fn refund(&self, policy: &Policy, key: &str) -> Result<(), Error> {
        let full_key = format!("{}:{}:{}", self.prefix, policy.name, key);
        let window_ms = u64::from(policy.window_seconds) * 1000;
        let answer = tokio::time::timeout(TIMEOUT, self.eval(REFUND, &full_key, window_ms, policy.quota.max(1))).await;
        match answer {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(Error::Internal(format!("Redis at {}: {e}", self.address))),
            Err(_) => Err(Error::Internal(format!("Redis at {}: no answer within {TIMEOUT:?}", self.address))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(RedisLimiter::new("redis://127.0.0.1:6379", "p").unwrap().address, "127.0.0.1:6379");
        assert_eq!(RedisLimiter::new("redis://cache/", "p").unwrap().address, "cache:6379");
        assert!(RedisLimiter::new("http://x", "p").is_err());
        assert!(RedisLimiter::new("redis://user:pw@x", "p").is_err());
    }

    /// Against the Redis of the machine (127.0.0.1:6379), as the deployment would use it.
    #[tokio::test]
    async fn shares_one_budget_and_refuses_past_it() {
        let prefix = format!("stablepay-test-{}-{}", std::process::id(), line!());
        let (a, b) = (
            RedisLimiter::new("redis://127.0.0.1:6379", &prefix).unwrap(),
            RedisLimiter::new("redis://127.0.0.1:6379", &prefix).unwrap(),
        );
        let p = Policy { name: "t", quota: 4, window_seconds: 60 };
        let mut remaining = Vec::new();
        for i in 0..4 {
            let l = if i % 2 == 0 { &a } else { &b };
            let v = l.check(&p, "k").await.unwrap();
            assert!(v.allowed);
            remaining.push(v.remaining);
        }
        assert_eq!(remaining, [3, 2, 1, 0]);
        let refused = b.check(&p, "k").await.unwrap();
        assert!(!refused.allowed);
        assert!((14..=15).contains(&refused.retry_after_seconds), "{refused:?}");
        assert!(a.check(&p, "other").await.unwrap().allowed);
    }

    #[tokio::test]
    async fn an_unreachable_redis_is_an_error_not_a_wait() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let l = RedisLimiter::new(&format!("redis://127.0.0.1:{port}"), "p").unwrap();
        let p = Policy { name: "t", quota: 4, window_seconds: 60 };
        let started = Instant::now();
        assert!(l.check(&p, "k").await.is_err());
        assert!(l.check(&p, "k").await.is_err(), "paused after a failure");
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
