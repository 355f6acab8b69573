//! A JSON-RPC endpoint in front of anvil that can lie as load-balanced providers do near the
//! head: answer `eth_getLogs` with nothing for a range it has not indexed yet, and (a worse
//! liar) hide the logs bloom of block headers. Everything else is forwarded as it is.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// How the endpoint lies.
#[derive(Default)]
pub struct Lies {
    /// `eth_getLogs` answers `[]` while this many answers remain to be lied (`u64::MAX`: always).
    pub empty_logs: AtomicU64,
    /// Block headers come with an empty logs bloom.
    pub hide_blooms: AtomicBool,
    /// `eth_getLogs` requests answered, lied or not.
    pub logs_asked: AtomicU64,
}

pub struct LyingRpc {
    pub port: u16,
    pub lies: Arc<Lies>,
    target: Arc<std::sync::Mutex<String>>,
}

impl LyingRpc {
    /// An endpoint telling the truth until told otherwise; it forwards to what
    /// [`LyingRpc::point_to`] names.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let lies = Arc::new(Lies::default());
        let target = Arc::new(std::sync::Mutex::new(String::new()));
        let (to, shared) = (target.clone(), lies.clone());
        tokio::spawn(async move {
            let http = crate::support::http_client();
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let (http, target, lies) = (http.clone(), to.lock().unwrap().clone(), shared.clone());
                tokio::spawn(async move {
                    let (read, mut write) = stream.into_split();
                    let mut read = BufReader::new(read);
                    // One request after another on the connection (keep-alive).
                    while let Some(body) = request(&mut read).await {
                        let answer = answer(&http, &target, &lies, body).await;
                        let head = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                            answer.len()
                        );
                        if write.write_all(head.as_bytes()).await.is_err() || write.write_all(&answer).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Self { port, lies, target }
    }

    /// Forwards to `url` (`http://127.0.0.1:PORT`) from now on.
    pub fn point_to(&self, url: &str) {
        *self.target.lock().unwrap() = url.to_owned();
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// The body of the next HTTP request on the connection, `None` once it is closed.
async fn request<R: tokio::io::AsyncBufRead + Unpin>(read: &mut R) -> Option<Vec<u8>> {
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if read.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0u8; length];
    read.read_exact(&mut body).await.ok()?;
    Some(body)
}

async fn answer(http: &reqwest::Client, target: &str, lies: &Lies, body: Vec<u8>) -> Vec<u8> {
    let call: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let method = call["method"].as_str().unwrap_or_default().to_owned();
    if method == "eth_getLogs" {
        lies.logs_asked.fetch_add(1, Ordering::SeqCst);
        let lie = lies.empty_logs.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| match n {
            0 => None,
            u64::MAX => Some(u64::MAX),
            n => Some(n - 1),
        });
        if lie.is_ok() {
            return json!({ "jsonrpc": "2.0", "id": call["id"], "result": [] }).to_string().into_bytes();
        }
    }
    let forwarded = http.post(target).header("Content-Type", "application/json").body(body).send().await;
    let Ok(forwarded) = forwarded else {
        return json!({ "jsonrpc": "2.0", "id": call["id"], "error": { "code": -32000, "message": "upstream" } })
            .to_string()
            .into_bytes();
    };
    let mut out: Value = forwarded.json().await.unwrap_or(Value::Null);
    if method == "eth_getBlockByNumber" && lies.hide_blooms.load(Ordering::SeqCst) && out["result"].is_object() {
        out["result"]["logsBloom"] = json!(format!("0x{}", "0".repeat(512)));
    }
    out.to_string().into_bytes()
}
