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
    // Where cargo put the binary (CARGO_TARGET_DIR when set, else the workspace's target/).
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| util::root().join("target"), std::path::PathBuf::from);
    let binary = target.join("debug/stablepay");
    let db = format!("stablepay_st_{}", std::process::id());
    util::psql(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))?;
    util::psql(&format!("CREATE DATABASE {db}"))?;
    let result = (|| {
        let url = util::database_url_for(&db);
        util::run(Command::new(&binary).arg("migrate").env("DATABASE_URL", &url).env("RUST_LOG", "warn"))?;
        let (_, key) = util::merchant_and_key(&binary, &url, "test", "secret")?;
        let (server, base): (Guard, String) = util::serve(&binary, &url, &[])?;
        let r = util::run(
            Command::new(&st)
                .arg("run")
                .arg(format!("{base}/v1/openapi.json"))
                .args(["--url", &base])
                .args(["--header", &format!("Authorization: Bearer {key}")])
                .args(["--checks", "not_a_server_error,response_schema_conformance,content_type_conformance"])
                .args(["--max-examples", &std::env::var("ST_MAX_EXAMPLES").unwrap_or_else(|_| "40".into())])
                .args(["--seed", "1"])
                .args(["--no-color"])
                .env("SCHEMATHESIS_HOOKS", ""),
        );
        drop(server);
        r
    })();
    let _ = util::psql(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"));
    result
}
