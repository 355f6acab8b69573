//! The deployment files against the binary: the compose file's environment, rendered with
//! `.env.example` (and a secret key, as an operator would add), is a valid configuration that
//! sets only variables the binary knows and every variable a production deployment must set;
//! deploy/README.md documents every variable.

use std::collections::BTreeMap;

use serde_json::Value;

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `KEY=value` lines (comments and blank lines skipped).
fn dotenv(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// Compose's interpolation: `${VAR}` and `${VAR:-default}`.
fn render(value: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').map(|e| start + e).expect("closed ${");
        let expr = &rest[start + 2..end];
        let (name, default) = expr.split_once(":-").unwrap_or((expr, ""));
        let found = vars.get(name).filter(|v| !v.is_empty()).cloned().unwrap_or_else(|| default.to_owned());
        out.push_str(&found);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out.trim_matches('"').to_owned()
}

/// The `environment: &env` mapping shared by the stablepay services.
fn stablepay_environment(compose: &str) -> Vec<(String, String)> {
    let mut lines = compose.lines().skip_while(|l| l.trim() != "environment: &env").skip(1);
    let mut out = Vec::new();
    for line in lines.by_ref() {
        if !line.starts_with("    ") || line.trim().is_empty() {
            break;
        }
        if line.trim().starts_with('#') {
            continue;
        }
        let (k, v) = line.trim().split_once(':').expect("KEY: value");
        out.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    out
}

#[tokio::test]
async fn the_compose_environment_is_a_valid_configuration_of_known_variables() {
    check_compose("deploy/compose.yaml", &["migrate:", "api-1:", "api-2:", "worker:"]).await;
}

#[tokio::test]
async fn the_high_availability_compose_is_a_valid_configuration_over_several_hosts() {
    let services = ["migrate:", "api-1:", "api-2:", "api-3:", "worker-1:", "worker-2:"];
    let env = check_compose("deploy/compose.ha.yaml", &services).await;
    let url = &env.iter().find(|(k, _)| k == "DATABASE_URL").expect("DATABASE_URL").1;
    assert!(url.contains(',') && url.contains("target_session_attrs=read-write"), "{url}");
}

/// Checks one compose file against the binary; returns its stablepay environment, rendered.
async fn check_compose(file: &str, services: &[&str]) -> Vec<(String, String)> {
    let compose = std::fs::read_to_string(root().join(file)).unwrap();
    let mut vars = dotenv(&std::fs::read_to_string(root().join("deploy/.env.example")).unwrap());
    vars.insert("STABLEPAY_SECRET_KEY".into(), "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=".into());
    let env: Vec<(String, String)> =
        stablepay_environment(&compose).into_iter().map(|(k, v)| (k, render(&v, &vars))).collect();
    assert!(env.len() >= 8, "{env:?}");
    // Every service of the binary uses that environment.
    for service in services {
        let block = compose.split(&format!("\n  {service}\n")).nth(1).expect(service);
        let block = block.split("\n  ").next().unwrap_or(block);
        assert!(block.contains("<<: *stablepay"), "{service} does not take the shared settings");
    }
    // Every file it mounts from deploy/ is there.
    for line in compose.lines().map(str::trim).filter(|l| l.starts_with("- ./")) {
        let local = line.trim_start_matches("- ./").split(':').next().unwrap();
        assert!(root().join("deploy").join(local).exists(), "{file} mounts deploy/{local}, which is missing");
    }
    let mut cmd = tokio::process::Command::new(crate::support::BIN);
    cmd.arg("config").arg("--json").env_clear().env("PATH", std::env::var("PATH").unwrap_or_default());
    for (k, v) in &env {
        cmd.env(k, v);
    }
    let out = cmd.output().await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["unknown"], serde_json::json!([]));
    let variables = report["variables"].as_array().unwrap();
    let known: Vec<&str> = variables.iter().filter_map(|v| v["name"].as_str()).collect();
    for (k, _) in &env {
        assert!(known.contains(&k.as_str()), "compose sets {k}, which the binary does not know");
    }
    for v in variables.iter().filter(|v| v["production"] == true) {
        assert_eq!(v["set"], true, "compose must set {}", v["name"]);
    }
    // Secrets are never printed.
    assert!(!text.contains("AQEBAQEB"), "{text}");
    // deploy/README.md documents each variable.
    let readme = std::fs::read_to_string(root().join("deploy/README.md")).unwrap();
    for name in known {
        assert!(readme.contains(&format!("`{name}`")), "deploy/README.md does not document {name}");
    }
    env
}

#[tokio::test]
async fn an_unknown_or_invalid_variable_fails_the_check() {
    let run = |k: &'static str, v: &'static str| async move {
        tokio::process::Command::new(crate::support::BIN).arg("config").env_clear().env(k, v).output().await.unwrap()
    };
    let typo = run("STABLEPAY_DB_POOL", "8").await;
    assert_eq!(typo.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&typo.stdout).contains("STABLEPAY_DB_POOL                  UNKNOWN"));
    let bad = run("STABLEPAY_DB_POOL_SIZE", "0").await;
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("STABLEPAY_DB_POOL_SIZE"));
}

/// `stablepay config` (text and JSON) and a refused start-up never print a credential held in a
/// URL setting: user info, secret query parameters, and the path and query of RPC URLs.
#[tokio::test]
async fn credentials_in_url_settings_are_masked_wherever_they_are_printed() {
    let settings = [
        ("DATABASE_URL", "postgres://app:hunter2@127.0.0.1:5432/shop?sslmode=disable&password=hunter2"),
        ("STABLEPAY_CHAIN_RPC_URLS", "https://polygon.example/v2/hunter2,http://127.0.0.1:8545/?key=hunter2"),
        ("STABLEPAY_SMTP_URL", "smtps://mailer:hunter2@smtp.example:465"),
        ("STABLEPAY_CONTRACT_KEY", "sk_test_hunter2"),
    ];
    // `stablepay config` with values it refuses: still masked, in text and JSON.
    for value in ["host=db user=app password=hunter2 dbname=shop", "postgres://db/shop?p%61ssword=hunter2"] {
        for json in [false, true] {
            let mut cmd = tokio::process::Command::new(crate::support::BIN);
            cmd.arg("config").env_clear().env("DATABASE_URL", value);
            if json {
                cmd.arg("--json");
            }
            let out = cmd.output().await.unwrap();
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(text.contains("DATABASE_URL"), "{text}");
            assert!(!text.contains("hunter2"), "DATABASE_URL {value:?} was printed with its password:\n{text}");
        }
    }
    for json in [false, true] {
        let mut cmd = tokio::process::Command::new(crate::support::BIN);
        cmd.arg("config").env_clear().env("PATH", std::env::var("PATH").unwrap_or_default());
        if json {
            cmd.arg("--json");
        }
        for (k, v) in settings {
            cmd.env(k, v);
        }
        let out = cmd.output().await.unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{text}");
        assert!(!text.contains("hunter2"), "a credential was printed:\n{text}");
        for shown in [
            "postgres://***@127.0.0.1:5432/shop?sslmode=disable&password=***",
            "https://polygon.example/***",
            "http://127.0.0.1:8545/***",
            "smtps://***@smtp.example:465",
        ] {
            assert!(text.contains(shown), "{shown} is not shown:\n{text}");
        }
    }
    // Refused at start-up: the error names the setting and masks the value.
    for (name, value) in [
        ("REDIS_URL", "redis://:hunter2@cache:6379"),
        ("DATABASE_URL", "mysql://app:hunter2@db/shop"),
        ("STABLEPAY_CHAIN_RPC_URLS", "ftp://rpc.example/v2/hunter2"),
        ("STABLEPAY_PUBLIC_BASE_URL", "https://app:hunter2@pay.example"),
        // A libpq key/value string, and a parameter name drivers decode to `password`.
        ("DATABASE_URL", "host=db user=app password=hunter2 dbname=shop"),
        ("DATABASE_URL", "mysql://db/shop?p%61ssword=hunter2"),
    ] {
        let out = tokio::process::Command::new(crate::support::BIN)
            .arg("serve")
            .env_clear()
            .env(name, value)
            .output()
            .await
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!out.status.success(), "{name}: {text}");
        assert!(text.contains(name), "{text}");
        assert!(!text.contains("hunter2"), "{name} was echoed with its credential:\n{text}");
    }
}
