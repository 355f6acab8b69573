//! Project automation: `cargo xtask <task>`.
//!
//! - `ci`: everything CI checks: format, clippy (-D warnings), the domain crate's documentation
//!   (no warning), every test, and a schemathesis run against the served OpenAPI document.
//! - `schemathesis`: only the schemathesis run.
//! - `tools`: install the test tools (anvil and playwright-core from npm, the Python packages)
//!   that `cargo test` needs; `ci` does it first.
//! - `db`: start a throwaway local PostgreSQL from the system's binaries when none is running.
//! - `bench`: the load benchmark (release build), see docs/benchmarks.md.
//! - `instructions [--update]`: the request path's instructions per request under callgrind
//!   against the committed baseline (`xtask/bench/callgrind/baseline.txt`); `ci` runs it.
//! - `openapi`: print the OpenAPI document.
//! - `api-reference`: print the API reference generated from it (`docs/api-reference.md`).

mod bench;
mod db;
mod instructions;
mod schemathesis;
mod util;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = args.first().map(String::as_str).unwrap_or("help");
    let result = match task {
        "ci" => ci(),
        "schemathesis" => schemathesis::run(),
        "tools" => tools(),
        "db" => db::run(&args[1..]),
        "bench" => bench::run(&args[1..]),
        "instructions" => instructions::run(&args[1..]),
        "openapi" => util::cargo(&["run", "--quiet", "-p", "stablepay", "--", "openapi"]),
        "api-reference" => util::cargo(&["run", "--quiet", "-p", "stablepay", "--", "openapi", "--reference"]),
        _ => {
            eprintln!(
                "usage: cargo xtask <ci|schemathesis|tools|db|bench [chain|webhooks|pdf|exports|mixed|dashboard|flash-sale|checkout-pages|scale|accounts|idle]|instructions [--update]|openapi|api-reference>"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {task}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn tools() -> Result<(), String> {
    util::step("chain tools", util::chain_tools)?;
    util::step("browser tools", util::browser_tools)?;
    util::step("python tools", util::python_tools)
}

fn ci() -> Result<(), String> {
    util::step("format", || util::cargo(&["fmt", "--all", "--check"]))?;
    util::step("clippy", || util::cargo(&["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]))?;
    // The domain crate is a library for other tools: its documentation builds without a warning
    // (every public item documented, every link resolved).
    util::step("domain docs", || {
        util::run(
            std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                .args(["doc", "--quiet", "--no-deps", "-p", "stablepay-domain"])
                .env("RUSTDOCFLAGS", "-D warnings")
                .current_dir(util::root()),
        )
    })?;
    tools()?;
    util::step("tests", || util::cargo(&["test", "--workspace"]))?;
    util::step("schemathesis", schemathesis::run)?;
    // The request path's cost, in instructions (deterministic, unlike a timing): a request
    // grown more than 5 % over its committed baseline fails.
    util::step("instructions", || instructions::run(&[]))?;
    Ok(())
}
