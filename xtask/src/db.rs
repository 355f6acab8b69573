//! `cargo xtask db [--port N]`: a throwaway local PostgreSQL (trust auth, 127.0.0.1:5432 by
//! default) from the system's binaries, when none is running. Data lives in
//! target/pgdata-<port>; stop it with `pg_ctl -D target/pgdata-<port> stop`.

use std::process::Command;

use crate::util;

fn running(port: &str) -> bool {
    Command::new("pg_isready").args(["-h", "127.0.0.1", "-p", port, "-q"]).status().is_ok_and(|s| s.success())
}

pub(crate) fn bin_dir() -> Result<std::path::PathBuf, String> {
    let mut dirs: Vec<_> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| "no PostgreSQL binaries under /usr/lib/postgresql (install postgresql)".to_string())?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("initdb").exists())
        .collect();
    dirs.sort();
    dirs.pop().ok_or_else(|| "no initdb found under /usr/lib/postgresql/*/bin".to_string())
}

/// `cargo xtask db [--port N]` (default 5432).
pub fn run(args: &[String]) -> Result<(), String> {
    let port = match args {
        [] => "5432".to_owned(),
        [flag, p] if flag == "--port" && p.parse::<u16>().is_ok() => p.clone(),
        _ => return Err("usage: cargo xtask db [--port N]".into()),
    };
    if running(&port) {
        println!("PostgreSQL is already running on 127.0.0.1:{port}");
        return Ok(());
    }
    let bin = bin_dir()?;
    let data = util::root().join(format!("target/pgdata-{port}"));
    let as_postgres = |program: &str| as_postgres(&bin, program);
    if !data.join("PG_VERSION").exists() {
        std::fs::create_dir_all(&data).map_err(|e| e.to_string())?;
        if is_root() {
            util::run(Command::new("chown").args(["-R", "postgres"]).arg(&data))?;
        }
        util::run(as_postgres("initdb").args(["-U", "postgres", "--auth=trust", "-D"]).arg(&data))?;
    }
    let options = format!("-p {port} -k /tmp -h 127.0.0.1");
    util::run(
        as_postgres("pg_ctl")
            .arg("-D")
            .arg(&data)
            .args(["-o", &options, "-l"])
            .arg(data.join("log"))
            .args(["-w", "start"]),
    )?;
    println!(
        "PostgreSQL started on 127.0.0.1:{port} (data in {}; stop: pg_ctl -D {} stop)",
        data.display(),
        data.display()
    );
    Ok(())
}

/// `program` of PostgreSQL's binaries in `bin`: initdb and postgres refuse to run as root, so
/// as root it runs as the postgres user.
pub(crate) fn as_postgres(bin: &std::path::Path, program: &str) -> Command {
    let mut cmd = if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin.join(program));
        c
    } else {
        Command::new(bin.join(program))
    };
    cmd.current_dir("/tmp");
    cmd
}

pub(crate) fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}
