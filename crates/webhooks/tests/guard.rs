//! The destination guard against every spelling of a blocked address: the sender refuses each
//! without opening a connection (a receiver on loopback counts what reaches it), it connects to
//! the address the client's parser reads when private destinations are allowed, and the
//! domain's reading of a host (what registration refuses) agrees with the client's.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chrono::Utc;
use stablepay_domain::event::{Event, EventData, EventType};
use stablepay_domain::ids::{EventId, MerchantId, WebhookDeliveryId};
use stablepay_domain::mode::{Mode, Scope};
use stablepay_domain::url::{HostAddress, HttpUrl};
use stablepay_domain::webhook::model::SendOutcome;
use stablepay_domain::webhook::model::{ErrorCategory, SigningSecret};
use stablepay_domain::webhook::ports::{OutgoingDelivery, WebhookSender};
use stablepay_webhooks::sender::HttpSender;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A receiver on 127.0.0.1 that answers 200 to anything and counts the connections it took.
async fn receiver() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let reached = Arc::new(AtomicUsize::new(0));
    let counter = reached.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let _ = socket.read(&mut buf).await;
                let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 7\r\nconnection: close\r\n\r\nreached";
                let _ = socket.write_all(answer).await;
            });
        }
    });
    (port, reached)
}

fn delivery(url: &str) -> OutgoingDelivery {
    let scope = Scope { merchant_id: MerchantId::parse("mer_guard").unwrap(), mode: Mode::Test };
    OutgoingDelivery {
        delivery_id: WebhookDeliveryId::parse("whd_guard").unwrap(),
        url: HttpUrl::parse(url).unwrap(),
        event: Event {
            id: EventId::parse("evt_guard").unwrap(),
            scope,
            event_type: EventType::InvoicePaid,
            created_at: Utc::now(),
            data: EventData::Null,
        },
        secrets: vec![SigningSecret::from_trusted(format!("whsec_{}", "A".repeat(43) + "="))],
        sent_at: Utc::now(),
    }
}

async fn send(url: &str, allow_private: bool) -> SendOutcome {
    let sender = HttpSender::new(allow_private, Duration::from_secs(5)).unwrap();
    sender.send(delivery(url)).await
}

/// The probe's spellings of loopback (with the receiver's port) and of the metadata address,
/// and IPv6 forms.
fn blocked_spellings(port: u16) -> Vec<String> {
    let loopback = [
        "127.0.0.1",
        "2130706433",
        "0177.0.0.1",
        "0x7f.0.0.1",
        "0X7F.0.0.1",
        "127.1",
        "127.0.1",
        "0",
        "0x7f000001",
        "017700000001",
        "127.0.0.1.",
        "0x7f.1",
        "[::1]",
        "[0:0:0:0:0:0:0:1]",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[::ffff:0:7f00:1]",
        "[::127.0.0.1]",
        "[::]",
        "localhost",
    ];
    let mut urls: Vec<String> = loopback.iter().map(|h| format!("http://{h}:{port}/hook")).collect();
    for metadata in
        ["2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "169.254.43518", "[::ffff:a9fe:a9fe]", "[fe80::1]"]
    {
        urls.push(format!("http://{metadata}/latest/meta-data/"));
    }
    urls
}

#[tokio::test]
async fn every_spelling_of_a_blocked_address_is_refused_before_connecting() {
    let (port, reached) = receiver().await;
    for url in blocked_spellings(port) {
        let outcome = send(&url, false).await;
        assert_eq!(outcome.error_category, Some(ErrorCategory::BlockedDestination), "{url}: {outcome:?}");
        assert_eq!(outcome.status_code, None, "{url}");
        assert_eq!(outcome.response_excerpt, None, "{url}");
    }
    assert_eq!(reached.load(Ordering::SeqCst), 0, "a blocked delivery reached the receiver");
}

#[tokio::test]
async fn allowed_private_destinations_are_reached_at_the_address_the_parser_reads() {
    let (port, reached) = receiver().await;
    for host in ["2130706433", "0x7f.1", "127.0.0.1."] {
        let outcome = send(&format!("http://{host}:{port}/hook"), true).await;
        assert_eq!(outcome.error_category, None, "{host}: {outcome:?}");
        assert_eq!(outcome.response_excerpt.as_deref(), Some("reached"), "{host}");
    }
    assert_eq!(reached.load(Ordering::SeqCst), 3);
    // The metadata address stays out of reach whatever the operator allows.
    let outcome = send("http://0xa9fea9fe/latest/meta-data/", true).await;
    assert_eq!(outcome.error_category, Some(ErrorCategory::BlockedDestination));
}

/// The domain reads a host (registration's check) as the client's parser does (delivery's).
#[test]
fn the_domain_reads_hosts_as_the_client_does() {
    let hosts = [
        "example.com",
        "1.example",
        "0x.example",
        "0x1g",
        "localhost",
        "127.0.0.1",
        "2130706433",
        "0177.0.0.1",
        "0x7f.0.0.1",
        "127.1",
        "0",
        "0x",
        "0x7f000001",
        "017700000001",
        "127.0.0.1.",
        "2852039166",
        "0xa9fea9fe",
        "0xA9.0376.43518",
        "999.1.1.1",
        "1.2.3.4.5",
        "4294967296",
        "08",
        "09.1",
        "1..1",
        "99999999999999999999999",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "[0:0:0:0:0:0:0:1]",
        "[fe80::1%25eth0]",
        "[1:2]",
    ];
    for host in hosts {
        let text = format!("http://{host}:8080/x");
        let ours = HttpUrl::parse(&text).unwrap().host_address();
        let theirs = match url::Url::parse(&text) {
            Err(_) => HostAddress::Invalid,
            Ok(u) => match u.host() {
                Some(url::Host::Ipv4(v4)) => HostAddress::Ip(IpAddr::V4(v4)),
                Some(url::Host::Ipv6(v6)) => HostAddress::Ip(IpAddr::V6(v6)),
                _ => HostAddress::Name,
            },
        };
        assert_eq!(ours, theirs, "{host}");
    }
}
