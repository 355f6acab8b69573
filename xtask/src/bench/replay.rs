// Benchmark statistics (rates) are floating point by nature; no money here.
#![allow(clippy::float_arithmetic, clippy::as_conversions, clippy::cast_precision_loss)]

//! Ceilings per operation that replay exactly the statements the API sends.
//!
//! The API benchmark runs on a private PostgreSQL cluster started from the system's binaries
//! (never the machine's shared one) with `pg_stat_statements` loaded. For each measured
//! operation:
//!
//! 1. **Capture**: with `log_statement = all` for a moment, the operation is sent twice and the
//!    statements the API sent for it (text and bound parameters) are read back from the
//!    cluster's log, between two markers. Connection set-up (`SET ...`, once per pooled
//!    connection) is left out.
//! 2. **Script**: the statements become a pgbench script run with `-M prepared`, so PostgreSQL
//!    parses and plans them once per connection as it does for the API's cached prepared
//!    statements. Each parameter is bound as in the capture (`-D` variables, sent as
//!    parameters); a NULL is a typed NULL (the types PostgreSQL infers for the statement); an
//!    identifier that differed between the two captures (a new row's id or token) gets a fresh
//!    random value per transaction so inserts do not collide.
//! 3. **Check**: while the API phase runs, `pg_stat_statements` counts what the API really sent;
//!    the bench prints, per request, the calls of each captured statement (1.00 when the
//!    script is the operation) and of anything else the API sent (key lookups, set-up).
//! 4. **Replay**: pgbench runs the script with the same number of clients on the same
//!    database. The ratio API / replay is the cost of HTTP, JSON, authentication and the
//!    service's own work: it cannot exceed 100 % unless the API does less database work than the
//!    capture showed.

use std::path::PathBuf;
use std::process::Command;

use crate::util;

/// A private PostgreSQL cluster for the benchmark (stopped and removed when dropped).
pub struct PrivatePg {
    data: PathBuf,
    bin: PathBuf,
    pub port: u16,
}

impl PrivatePg {
    /// initdb in `target/bench-pg-<pid>`, then start on a free port with `pg_stat_statements`.
    pub fn start() -> Result<Self, String> {
        let bin = crate::db::bin_dir()?;
        let data = util::root().join(format!("target/bench-pg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data);
        std::fs::create_dir_all(&data).map_err(|e| e.to_string())?;
        if crate::db::is_root() {
            util::run(Command::new("chown").args(["-R", "postgres"]).arg(&data))?;
        }
        let port =
            std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
        let pg = Self { data, bin, port };
        util::output(pg.as_postgres("initdb").args(["-U", "postgres", "--auth=trust", "-D"]).arg(&pg.data))?;
        let options = format!(
            "-p {port} -k /tmp -h 127.0.0.1 -c shared_preload_libraries=pg_stat_statements -c max_connections=200 -c log_line_prefix='%m [%p] '"
        );
        util::output(
            pg.as_postgres("pg_ctl")
                .arg("-D")
                .arg(&pg.data)
                .args(["-o", &options, "-l"])
                .arg(pg.log())
                .args(["-w", "start"]),
        )?;
        util::run(Command::new("psql").args([
            &pg.url("postgres"),
            "-qAt",
            "-c",
            "CREATE EXTENSION pg_stat_statements",
        ]))?;
        Ok(pg)
    }

    fn as_postgres(&self, program: &str) -> Command {
        crate::db::as_postgres(&self.bin, program)
    }

    pub fn log(&self) -> PathBuf {
        self.data.join("log")
    }

    /// The URL of database `db` on this cluster.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// Runs `sql` on database `db`; its rows as text, one per line.
    pub fn query(&self, db: &str, sql: &str) -> Result<String, String> {
        util::output(Command::new("psql").args([&self.url(db), "-qAt", "-F", "\t", "-c", sql]))
    }
}

impl Drop for PrivatePg {
    fn drop(&mut self) {
        let _ = self.as_postgres("pg_ctl").arg("-D").arg(&self.data).args(["-m", "immediate", "-w", "stop"]).output();
        let _ = std::fs::remove_dir_all(&self.data);
    }
}

/// One statement as the API sent it: text and bound parameters (`None`: NULL).
#[derive(Debug, Clone)]
pub struct Statement {
    pub sql: String,
    pub params: Vec<Option<String>>,
}

/// The statements the API sent while `send` ran (each request of `send` on its own), read from
/// the cluster's log between two markers.
pub fn capture(
    pg: &PrivatePg,
    db: &str,
    send: &mut dyn FnMut() -> Result<(), String>,
) -> Result<Vec<Statement>, String> {
    pg.query("postgres", "ALTER SYSTEM SET log_statement = 'all'")?;
    pg.query("postgres", "SELECT pg_reload_conf()")?;
    // A reload is asynchronous: wait until a new session sees it.
    for _ in 0..50 {
        if pg.query(db, "SHOW log_statement")?.trim() == "all" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let nonce = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
    );
    let start = format!("stablepay-capture-start-{nonce}");
    let end = format!("stablepay-capture-end-{nonce}");
    pg.query(db, &format!("SELECT '{start}'"))?;
    // The reload is signalled to every backend, the API's too, which applies it before it
    // reads its next command.
    let sent = send();
    pg.query(db, &format!("SELECT '{end}'"))?;
    pg.query("postgres", "ALTER SYSTEM RESET log_statement")?;
    pg.query("postgres", "SELECT pg_reload_conf()")?;
    sent?;
    let log = std::fs::read_to_string(pg.log()).map_err(|e| e.to_string())?;
    parse_log(&log, &start, &end)
}

/// The statements between the two markers (leaving out the markers' sessions and `SET`).
fn parse_log(log: &str, start: &str, end: &str) -> Result<Vec<Statement>, String> {
    // Join continuation lines (a statement with line breaks) to the entry they belong to.
    let mut entries: Vec<String> = Vec::new();
    for line in log.lines() {
        let starts_entry =
            line.len() > 10 && line.as_bytes()[..4].iter().all(u8::is_ascii_digit) && line.as_bytes()[4] == b'-';
        match entries.last_mut() {
            Some(last) if !starts_entry => {
                last.push('\n');
                last.push_str(line);
            }
            _ => entries.push(line.to_owned()),
        }
    }
    let from = entries.iter().position(|e| e.contains(start)).ok_or("the capture's start marker is not in the log")?;
    let to = entries.iter().position(|e| e.contains(end)).ok_or("the capture's end marker is not in the log")?;
    let mut out: Vec<Statement> = Vec::new();
    let mut last_pid: Option<String> = None;
    for entry in &entries[from + 1..to] {
        let pid = entry.split('[').nth(1).and_then(|s| s.split(']').next()).map(str::to_owned);
        if let Some(rest) = entry.split_once("DETAIL:  parameters: ").map(|(_, r)| r) {
            if pid == last_pid
                && let Some(last) = out.last_mut()
            {
                last.params = parse_params(rest)?;
            }
            continue;
        }
        let sql = if let Some((_, s)) = entry.split_once("LOG:  statement: ") {
            s
        } else if let Some((_, s)) = entry.split_once("LOG:  execute ") {
            s.split_once(": ").map(|(_, s)| s).ok_or("an execute line without a statement")?
        } else {
            continue;
        };
        last_pid = None;
        if sql.starts_with("SET ") {
            continue;
        }
        last_pid = pid;
        out.push(Statement { sql: sql.to_owned(), params: Vec::new() });
    }
    if out.is_empty() {
        return Err("the API sent no statement during the capture".into());
    }
    Ok(out)
}

/// `$1 = 'a', $2 = NULL, $3 = 'it''s'` (PostgreSQL's log of bound parameters).
fn parse_params(text: &str) -> Result<Vec<Option<String>>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ' ' || *c == ',') {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        if chars.next() != Some('$') {
            return Err(format!("unexpected parameter list: {text}"));
        }
        let number: String = std::iter::from_fn(|| chars.next_if(char::is_ascii_digit)).collect();
        let index: usize = number.parse().map_err(|_| format!("unexpected parameter list: {text}"))?;
        if index != out.len() + 1 {
            return Err(format!("parameters out of order in: {text}"));
        }
        for expected in [' ', '=', ' '] {
            if chars.next() != Some(expected) {
                return Err(format!("unexpected parameter list: {text}"));
            }
        }
        if chars.peek() == Some(&'\'') {
            chars.next();
            let mut value = String::new();
            loop {
                match chars.next() {
                    Some('\'') if chars.peek() == Some(&'\'') => {
                        chars.next();
                        value.push('\'');
                    }
                    Some('\'') => break,
                    Some(c) => value.push(c),
                    None => return Err(format!("an unterminated parameter in: {text}")),
                }
            }
            out.push(Some(value));
        } else {
            let word: String = std::iter::from_fn(|| chars.next_if(|c| *c != ',')).collect();
            if word.trim() != "NULL" {
                return Err(format!("unexpected parameter value {word:?}"));
            }
            out.push(None);
        }
    }
    Ok(out)
}

/// Whether two captures sent the same statements (texts, in order).
pub fn same_statements(a: &[Statement], b: &[Statement]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.sql == y.sql)
}

/// A pgbench script and the `-D` variables it binds.
#[derive(Debug)]
pub struct Script {
    pub text: String,
    pub defines: Vec<(String, String)>,
}

/// Whether a value that changed between two requests is a new identifier (fresh per
/// transaction in the replay) rather than data (bound as captured).
fn is_identifier(a: &str, b: &str) -> bool {
    let id = |s: &str| s.len() >= 16 && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    id(a) && id(b) && a.len() == b.len()
}

/// The part of an identifier kept in the replay's fresh values (`inv_`, `cs_`).
fn id_prefix(a: &str) -> &str {
    a.find('_').map_or("", |i| &a[..=i])
}

/// The pgbench script of an operation captured twice (`first`, `second`: the same statements
/// for two requests). `types(sql)` answers the parameter types PostgreSQL infers for `sql`.
pub fn script(
    name: &str,
    first: &[Statement],
    second: &[Statement],
    types: &dyn Fn(&str) -> Result<Vec<String>, String>,
) -> Result<Script, String> {
    if !same_statements(first, second) {
        return Err(format!("{name}: two requests sent different statements; no single replay stands for them"));
    }
    let mut text = String::new();
    let mut defines = Vec::new();
    for (s, (a, b)) in first.iter().zip(second).enumerate() {
        let kinds = if a.params.iter().any(Option::is_none) { types(&a.sql)? } else { Vec::new() };
        let mut values: Vec<String> = Vec::new();
        for (i, (x, y)) in a.params.iter().zip(&b.params).enumerate() {
            let value = match (x, y) {
                (None, _) => {
                    let kind = kinds.get(i).ok_or_else(|| format!("{name}: no type for ${}", i + 1))?;
                    format!("NULL::{kind}")
                }
                (Some(x), Some(y)) if x != y && is_identifier(x, y) => {
                    let var = format!("u{s}_{}", i + 1);
                    text.push_str(&format!("\\set {var} random(1, 999999999999999)\n"));
                    format!("('{}' || :{var})", id_prefix(x))
                }
                (Some(x), _) => {
                    let var = format!("p{s}_{}", i + 1);
                    defines.push((var.clone(), x.clone()));
                    format!(":{var}")
                }
            };
            values.push(value);
        }
        text.push_str(&substitute(&a.sql, &values)?);
        text.push_str(";\n");
    }
    Ok(Script { text, defines })
}

/// `sql` with `$n` replaced by `values[n - 1]`, on one line (pgbench reads a statement per line
/// unless it ends with `\`).
fn substitute(sql: &str, values: &[String]) -> Result<String, String> {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            let number: String = std::iter::from_fn(|| chars.next_if(char::is_ascii_digit)).collect();
            let n: usize = number.parse().map_err(|_| "a bad parameter number")?;
            out.push_str(values.get(n.wrapping_sub(1)).ok_or_else(|| format!("${n} has no value"))?);
        } else if c == '\n' || c == '\r' {
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// The parameter types PostgreSQL infers for `sql` on database `db`.
pub fn parameter_types(pg: &PrivatePg, db: &str, sql: &str) -> Result<Vec<String>, String> {
    let out = util::output(Command::new("psql").args([
        &pg.url(db),
        "-qAt",
        "-c",
        &format!("PREPARE stablepay_replay_types AS {sql}"),
        "-c",
        "SELECT array_to_string(parameter_types::text[], '|') FROM pg_prepared_statements WHERE name = 'stablepay_replay_types'",
    ]))?;
    Ok(out.trim().split('|').map(str::to_owned).collect())
}

/// What pgbench measured.
#[derive(Clone)]
pub struct Replay {
    pub tps: f64,
    pub latency_ms: f64,
}

/// Runs `script` with pgbench on `db` (`clients` clients, 2 threads, `seconds`, prepared).
pub fn replay(pg: &PrivatePg, db: &str, script: &Script, clients: usize, seconds: u64) -> Result<Replay, String> {
    let path = std::env::temp_dir().join(format!("stablepay-replay-{}.sql", std::process::id()));
    std::fs::write(&path, &script.text).map_err(|e| e.to_string())?;
    let mut cmd = Command::new("pgbench");
    cmd.args(["-h", "127.0.0.1", "-p", &pg.port.to_string(), "-U", "postgres", "-n", "-M", "prepared"])
        .args(["-c", &clients.to_string(), "-j", "2", "-T", &seconds.to_string(), "-f"])
        .arg(&path);
    for (k, v) in &script.defines {
        cmd.arg("-D").arg(format!("{k}={v}"));
    }
    cmd.arg(db);
    let out = util::output(&mut cmd);
    let _ = std::fs::remove_file(&path);
    let out = out?;
    let number = |prefix: &str| -> Option<f64> {
        out.lines().find_map(|l| l.strip_prefix(prefix)?.split_whitespace().next()?.parse().ok())
    };
    let failed = out.lines().find_map(|l| l.strip_prefix("number of failed transactions: ")).unwrap_or("0");
    if !failed.starts_with('0') {
        return Err(format!("the replay had failed transactions:\n{out}"));
    }
    Ok(Replay {
        tps: number("tps = ").ok_or_else(|| format!("no tps in pgbench's output:\n{out}"))?,
        latency_ms: number("latency average = ").unwrap_or(0.0),
    })
}

/// Empties `pg_stat_statements`.
pub fn reset_statements(pg: &PrivatePg) -> Result<(), String> {
    pg.query("postgres", "SELECT pg_stat_statements_reset()").map(|_| ())
}

/// What database `db` ran since the last reset: (statement, calls).
pub fn statements(pg: &PrivatePg, db: &str) -> Result<Vec<(String, u64)>, String> {
    let out = pg.query(
        "postgres",
        &format!(
            "SELECT calls, regexp_replace(query, '\\s+', ' ', 'g') FROM pg_stat_statements \
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '{db}') ORDER BY calls DESC"
        ),
    )?;
    Ok(out
        .lines()
        .filter_map(|l| {
            let (calls, query) = l.split_once('\t')?;
            Some((query.to_owned(), calls.parse().ok()?))
        })
        .collect())
}

/// Per request of a phase of `requests`: the calls of each captured statement, and of every
/// other statement sent at least once per 100 requests (shortened), for the report.
pub fn per_request(seen: &[(String, u64)], captured: &[Statement], requests: usize) -> Vec<(String, f64)> {
    let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let requests = requests.max(1) as f64;
    let mut out = Vec::new();
    for c in captured {
        let calls = seen.iter().filter(|(q, _)| *q == norm(&c.sql)).map(|(_, n)| *n).sum::<u64>();
        out.push((short(&c.sql), calls as f64 / requests));
    }
    for (q, n) in seen {
        let rate = *n as f64 / requests;
        if rate >= 0.01 && !captured.iter().any(|c| norm(&c.sql) == *q) {
            out.push((format!("(other) {}", short(q)), rate));
        }
    }
    out
}

fn short(sql: &str) -> String {
    let one: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.len() > 60 {
        format!("{}...", &one[..one.char_indices().nth(60).map_or(one.len(), |(i, _)| i)])
    } else {
        one
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_read_as_logged() {
        let p = parse_params("$1 = 'inv_1', $2 = NULL, $3 = 'it''s, here', $4 = '{\"a\": 1}'").unwrap();
        assert_eq!(p, vec![Some("inv_1".into()), None, Some("it's, here".into()), Some("{\"a\": 1}".into())]);
        assert!(parse_params("$2 = 'x'").is_err());
    }

    #[test]
    fn the_log_between_markers_gives_the_statements_with_their_parameters() {
        let log = "\
2026-11-23 20:56:25.277 UTC [1] LOG:  statement: select 'start-x'
2026-11-23 20:56:25.304 UTC [2] LOG:  execute s15: SET TIME ZONE 'UTC'
2026-11-23 20:56:25.306 UTC [2] LOG:  execute s17: INSERT INTO t (a, b)
VALUES ($1, $2)
2026-11-23 20:56:25.306 UTC [2] DETAIL:  parameters: $1 = 'inv_a', $2 = NULL
2026-11-23 20:56:25.373 UTC [3] LOG:  statement: select 'end-x'
";
        let s = parse_log(log, "start-x", "end-x").unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].sql, "INSERT INTO t (a, b)\nVALUES ($1, $2)");
        assert_eq!(s[0].params, vec![Some("inv_a".into()), None]);
    }

    #[test]
    fn new_identifiers_are_fresh_nulls_typed_and_data_bound() {
        let st = |id: &str, at: &str| Statement {
            sql: "INSERT INTO t (id, m, at, n) VALUES ($1, $2, $3, $4)".into(),
            params: vec![Some(id.into()), Some("mer_1".into()), Some(at.into()), None],
        };
        let first = [st("inv_aaaaaaaaaaaaaaaaaaaaaa", "2026-11-23 20:56:25+00")];
        let second = [st("inv_bbbbbbbbbbbbbbbbbbbbbb", "2026-11-23 20:56:26+00")];
        let types =
            |_: &str| Ok(vec!["text".into(), "text".into(), "timestamp with time zone".into(), "bigint".into()]);
        let s = script("create", &first, &second, &types).unwrap();
        assert_eq!(
            s.text,
            "\\set u0_1 random(1, 999999999999999)\nINSERT INTO t (id, m, at, n) VALUES (('inv_' || :u0_1), :p0_2, :p0_3, NULL::bigint);\n"
        );
        assert_eq!(s.defines, vec![("p0_2".into(), "mer_1".into()), ("p0_3".into(), "2026-11-23 20:56:25+00".into())]);
        let other = [Statement { sql: "SELECT 1".into(), params: vec![] }];
        assert!(script("create", &first, &other, &types).is_err());
    }
}
