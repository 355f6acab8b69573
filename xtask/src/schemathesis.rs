//! Schemathesis against the served OpenAPI document: no 5xx and no response that breaks its
//! schema. Installs schemathesis (pinned) into target/st-venv on first use.

use std::process::Command;

use crate::util::{self, Guard};

const VERSION: &str = "4.32.5";

fn ensure_installed() -> Result<std::path::PathBuf, String> {
    let venv = util::root().join("target/st-venv");
    let st = venv.join("bin/st");
    let marker = venv.join(format!(".schemathesis-{VERSION}"));
    if st.exists() && marker.exists() {
        return Ok(st);
    }
    util::run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    util::run(Command::new(venv.join("bin/pip")).args(["install", "--quiet", &format!("schemathesis=={VERSION}")]))?;
    std::fs::write(&marker, VERSION).map_err(|e| e.to_string())?;
    Ok(st)
}

pub fn run() -> Result<(), String> {
    let st = ensure_installed()?;
    util::cargo(&["build", "--quiet", "-p", "stablepay"])?;
    let binary = util::built_binary("debug");
    let db = format!("stablepay_st_{}", std::process::id());
    let url = util::migrated_database(&binary, &db)?;
    let result = (|| {
        let (_, key) = util::merchant_and_key(&binary, &url, "test", "secret")?;
        // Webhook endpoints need the key that encrypts their signing secrets.
        let env = [("STABLEPAY_SECRET_KEY", "c2NoZW1hdGhlc2lzLW9ubHktbm90LWEtcmVhbC1rZXk=")];
        let (server, base): (Guard, String) = util::serve(&binary, &url, &env)?;
        let config = util::root().join("tools/schemathesis/schemathesis.toml");
        let r = util::run(
            Command::new(&st)
                .arg("--config-file")
                .arg(&config)
                .arg("run")
                .arg(format!("{base}/v1/openapi.json"))
                .args(["--url", &base])
                .args(["--header", &format!("Authorization: Bearer {key}")])
                .args(["--checks", &std::env::var("ST_CHECKS").unwrap_or_else(|_| "all".into())])
                .args(["--max-examples", &std::env::var("ST_MAX_EXAMPLES").unwrap_or_else(|_| "40".into())])
                .args(["--seed", &std::env::var("ST_SEED").unwrap_or_else(|_| "1".into())])
                .args(["--no-color"])
                .env("SCHEMATHESIS_HOOKS", ""),
        );
        drop(server);
        r
    })();
    // ST_KEEP_DB=1 keeps the database to look into after a failure.
    if std::env::var_os("ST_KEEP_DB").is_none() {
        util::drop_database(&db);
    } else {
        eprintln!("kept database {db}");
    }
    result
}
