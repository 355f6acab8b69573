//! Project automation: `cargo xtask <task>`.
//!
//! - `ci`: everything CI checks: format, clippy (-D warnings), every test, and a schemathesis
//!   run against the served OpenAPI document.
//! - `schemathesis`: only the schemathesis run.
//! - `db`: start a throwaway local PostgreSQL from the system's binaries when none is running.
//! - `bench`: the load benchmark (release build), see docs/benchmarks.md.
//! - `openapi`: print the OpenAPI document.

mod bench;
mod bench_chain;
mod bench_pdf;
mod bench_webhooks;
mod db;
mod schemathesis;
mod util;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = args.first().map(String::as_str).unwrap_or("help");
    let result = match task {
        "ci" => ci(),
        "schemathesis" => schemathesis::run(),
        "db" => db::run(&args[1..]),
        "bench" => bench::run(&args[1..]),
        "openapi" => util::cargo(&["run", "--quiet", "-p", "stablepay", "--", "openapi"]),
        _ => {
            eprintln!("usage: cargo xtask <ci|schemathesis|db|bench|openapi>");
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

fn ci() -> Result<(), String> {
    util::step("format", || util::cargo(&["fmt", "--all", "--check"]))?;
    util::step("clippy", || util::cargo(&["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]))?;
    util::step("chain tools", util::chain_tools)?;
    util::step("browser tools", util::browser_tools)?;
    util::step("python tools", util::python_tools)?;
    util::step("tests", || util::cargo(&["test", "--workspace"]))?;
    util::step("schemathesis", schemathesis::run)?;
    Ok(())
}
