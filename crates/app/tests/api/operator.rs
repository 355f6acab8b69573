//! The operator's command line: merchants and keys, refusals with clear messages, output that
//! ends quietly on a closed pipe, and the sandbox (`stablepay dev`).

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;

use crate::support::{BIN, TestApp, fresh_db};

async fn cli(app: &TestApp, args: &[&str]) -> (bool, Value, String) {
    let out = Command::new(BIN).args(args).env("DATABASE_URL", app.db.url()).output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let value = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (out.status.success(), value, format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)))
}

#[tokio::test]
async fn merchants_and_keys_are_listed_shown_suspended_and_unsuspended() {
    let app = TestApp::spawn().await;
    let (a, b) = (app.merchant("Alpha"), app.merchant("Beta"));
    let (ok, list, _) = cli(&app, &["merchant", "list", "--json"]).await;
    assert!(ok);
    let names: Vec<&str> = list["merchants"].as_array().unwrap().iter().filter_map(|m| m["name"].as_str()).collect();
    assert_eq!(names, ["Alpha", "Beta"]);
    let (_, _, table) = cli(&app, &["merchant", "list"]).await;
    assert!(table.starts_with("ID ") && table.contains(&b.id) && table.contains("Beta"), "{table}");

    let (ok, shown, _) = cli(&app, &["merchant", "show", &a.id, "--json"]).await;
    assert!(ok);
    assert_eq!(shown["status"], "active");
    assert_eq!(shown["live"], Value::Null);
    let (ok, _, text) = cli(&app, &["merchant", "show", "mer_nobody"]).await;
    assert!(!ok && text.contains("NOT_FOUND"), "{text}");

    // Keys: four per merchant from the fixture; a used key shows when (within a minute).
    app.get(&a.sk_test, "/v1/events").await.ok(200);
    let mut used = Value::Null;
    for _ in 0..50 {
        let (ok, keys, _) = cli(&app, &["key", "list", "--merchant", &a.id, "--json"]).await;
        assert!(ok);
        let keys = keys["keys"].as_array().unwrap().clone();
        assert_eq!(keys.len(), 4);
        let prefix = &a.sk_test[..12];
        let sk = keys.iter().find(|k| k["prefix"] == prefix).unwrap().clone();
        if !sk["lastUsedAt"].is_null() {
            used = sk;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(used["mode"], "test");
    assert_eq!(used["type"], "secret");
    assert_eq!(used["revokedAt"], Value::Null);
    assert!(!used.to_string().contains(&a.sk_test), "the key itself is never shown again");
    let (_, _, table) = cli(&app, &["key", "list", "--merchant", &a.id]).await;
    assert!(table.contains("LAST USED") && table.contains(&a.sk_test[..12]), "{table}");
    assert!(!table.contains(&a.sk_test), "{table}");

    // Suspension, refused activation while suspended, and its end.
    assert!(cli(&app, &["merchant", "suspend", &a.id, "--json"]).await.0);
    app.get_until(&a.sk_test, "/v1/events", 403).await.assert_error(403, "ACCOUNT_SUSPENDED");
    let wallet = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
    let (ok, err, text) =
        cli(&app, &["merchant", "activate", &a.id, "--settlement-wallet", wallet, "--token", "USDC", "--json"]).await;
    assert!(!ok);
    assert_eq!(err["error"]["code"], "ACCOUNT_SUSPENDED");
    assert!(text.contains(&format!("run `stablepay merchant unsuspend {}` first", a.id)), "{text}");
    assert_eq!(cli(&app, &["merchant", "show", &a.id, "--json"]).await.1["live"], Value::Null);
    let (ok, done, _) = cli(&app, &["merchant", "unsuspend", &a.id, "--json"]).await;
    assert!(ok);
    assert_eq!(done, json!({ "id": a.id, "status": "active" }));
    app.get_until(&a.sk_test, "/v1/events", 200).await.ok(200);
    let (ok, live, _) =
        cli(&app, &["merchant", "activate", &a.id, "--settlement-wallet", wallet, "--token", "USDC", "--json"]).await;
    assert!(ok, "{live}");

    // The usage shows --json as optional.
    let (_, _, help) = cli(&app, &["key", "list", "--help"]).await;
    assert!(
        help.contains("--json") && help.contains("Usage: stablepay key list [OPTIONS] --merchant <MERCHANT>"),
        "{help}"
    );
}

#[tokio::test]
async fn output_to_a_closed_pipe_ends_quietly() {
    for args in [&["openapi"][..], &["openapi", "--reference"][..], &["config"][..]] {
        let mut child =
            Command::new(BIN).args(args).env_clear().stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 16];
        stdout.read_exact(&mut first).await.unwrap();
        drop(stdout); // like `| head -c 16`
        let mut stderr = String::new();
        child.stderr.take().unwrap().read_to_string(&mut stderr).await.unwrap();
        let status = child.wait().await.unwrap();
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(status.code().is_some(), "{args:?} ended by a signal: {status}");
    }
}

#[tokio::test]
async fn the_sandbox_prints_the_address_it_bound_and_keeps_its_keys_private() {
    let db = fresh_db().await;
    let dir = std::env::temp_dir().join(format!("stablepay-dev-{}", db.name));
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = Command::new(BIN)
        .arg("dev")
        .current_dir(&dir)
        .env("DATABASE_URL", db.url())
        .env("STABLEPAY_BIND", "127.0.0.1:0")
        .env("STABLEPAY_METRICS_BIND", "127.0.0.1:0")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut listening = String::new();
    let mut base = String::new();
    let mut secret = String::new();
    let mut dashboard = String::new();
    tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(addr) = line.strip_prefix("stablepay listening on ") {
                listening = addr.to_owned();
            } else if let Some(url) = line.trim().strip_prefix("base URL:") {
                base = url.trim().to_owned();
            } else if let Some(key) = line.trim().strip_prefix("secret key:") {
                secret = key.trim().to_owned();
            } else if let Some(d) = line.trim().strip_prefix("dashboard:") {
                dashboard = d.trim().to_owned();
            } else if line.contains("readable by you only") {
                break;
            }
        }
    })
    .await
    .expect("the sandbox did not print its banner");
    assert!(!listening.ends_with(":0"), "{listening}");
    assert_eq!(base, format!("{listening}/v1"));
    // The printed address and key work.
    let res = crate::support::http_client().get(format!("{base}/events")).bearer_auth(&secret).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    // The printed owner signs in to the dashboard.
    let (url, rest) = dashboard.split_once(" (sign in as ").expect(&dashboard);
    let (email, password) = rest.trim_end_matches(')').split_once(" with the password ").unwrap();
    assert_eq!(url, format!("{listening}/dashboard"));
    let login = crate::support::http_client()
        .post(format!("{listening}/v1/dashboard/sessions"))
        .json(&serde_json::json!({ "email": email, "password": password }))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status().as_u16(), 201, "{}", login.text().await.unwrap());
    // A partner's contract check passes against the sandbox.
    let check =
        Command::new(BIN).args(["contract-check", "--base-url", &listening, "--key", &secret]).output().await.unwrap();
    let lines = String::from_utf8_lossy(&check.stdout).into_owned();
    assert!(check.status.success(), "{lines}");
    assert!(lines.lines().count() >= 12 && lines.lines().all(|l| l.starts_with("ok   ")), "{lines}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for file in ["dev.json", "secret.key"] {
            let mode = std::fs::metadata(dir.join(".stablepay").join(file)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{file} is {:o}", mode & 0o777);
        }
    }
    child.kill().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
