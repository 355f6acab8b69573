//! A webhook receiver on loopback: a small HTTP/1.1 server that records every request (headers
//! and exact body bytes) and answers as the test tells it (a status, a delay, a redirect, an
//! oversized body, or no answer at all).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    /// Names lower-cased, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

#[derive(Clone, Debug)]
pub enum Reply {
    Status(u16),
    /// Answer after a while.
    Slow(Duration, u16),
    /// 302 to another place.
    Redirect,
    /// 200 with a body of this many bytes.
    Big(usize),
    /// Read the request and never answer.
    Hang,
}

#[derive(Clone)]
pub struct Receiver {
    pub port: u16,
    received: Arc<Mutex<Vec<Received>>>,
    queued: Arc<Mutex<VecDeque<Reply>>>,
    default: Arc<Mutex<Reply>>,
}

impl Receiver {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let r = Self {
            port: listener.local_addr().unwrap().port(),
            received: Arc::default(),
            queued: Arc::default(),
            default: Arc::new(Mutex::new(Reply::Status(200))),
        };
        let server = r.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let server = server.clone();
                tokio::spawn(async move { server.connection(stream).await });
            }
        });
        r
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The answer to every request from now on (unless one is queued).
    pub fn answer(&self, reply: Reply) {
        *self.default.lock().unwrap() = reply;
    }

    /// The answer to the next request only.
    pub fn queue(&self, reply: Reply) {
        self.queued.lock().unwrap().push_back(reply);
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// Waits until at least `n` requests arrived (at most `limit`); answers them all.
    pub async fn wait_for(&self, n: usize, limit: Duration) -> Vec<Received> {
        let start = Instant::now();
        loop {
            let got = self.received();
            if got.len() >= n {
                return got;
            }
            assert!(start.elapsed() < limit, "{} of {n} requests after {limit:?}", got.len());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn connection(&self, mut stream: TcpStream) {
        let mut buf = Vec::new();
        loop {
            let head_end = loop {
                if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break i;
                }
                let mut chunk = [0u8; 8192];
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            };
            let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
            let mut lines = head.split("\r\n");
            let path = lines.next().unwrap_or("").split(' ').nth(1).unwrap_or("").to_owned();
            let headers: Vec<(String, String)> = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
                .collect();
            let length: usize =
                headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
            let body_start = head_end + 4;
            while buf.len() < body_start + length {
                let mut chunk = [0u8; 8192];
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let body = buf[body_start..body_start + length].to_vec();
            buf.drain(..body_start + length);
            self.received.lock().unwrap().push(Received { path, headers, body });
            let reply = self.queued.lock().unwrap().pop_front().unwrap_or_else(|| self.default.lock().unwrap().clone());
            let response = match reply {
                Reply::Status(code) => answer(code, "", b"ok"),
                Reply::Slow(wait, code) => {
                    tokio::time::sleep(wait).await;
                    answer(code, "", b"slow")
                }
                Reply::Redirect => answer(302, "Location: http://127.0.0.1:9/elsewhere\r\n", b""),
                Reply::Big(n) => answer(200, "", &vec![b'x'; n]),
                Reply::Hang => {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    return;
                }
            };
            if stream.write_all(&response).await.is_err() {
                return;
            }
        }
    }
}

fn answer(code: u16, extra: &str, body: &[u8]) -> Vec<u8> {
    let mut out =
        format!("HTTP/1.1 {code} X\r\nContent-Length: {}\r\nContent-Type: text/plain\r\n{extra}\r\n", body.len())
            .into_bytes();
    out.extend_from_slice(body);
    out
}
