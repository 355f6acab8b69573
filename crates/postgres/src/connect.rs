//! How every connection is made (the pools, the `LISTEN` loops): the URL's own settings, with
//! the failover defaults for what it leaves out.

use std::time::Duration;

use diesel::ConnectionError;
use diesel_async::AsyncPgConnection;

/// Whether the driver can use `url`: well formed (one host or several, `target_session_attrs`),
/// and not asking for TLS, which stablepay does not speak to PostgreSQL (the database belongs on
/// a private network). The error says why not.
pub fn check_url(url: &str) -> Result<(), String> {
    let parsed: tokio_postgres::Config = url.parse().map_err(|e: tokio_postgres::Error| e.to_string())?;
    if parsed.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
        return Err("sslmode=require cannot be met: stablepay connects to PostgreSQL without TLS (keep the database \
                    on a private network; use sslmode=prefer or disable)"
            .to_owned());
    }
    Ok(())
}

/// The keepalive pause tokio-postgres uses when the URL names none (two hours).
const DEFAULT_KEEPALIVES_IDLE: Duration = Duration::from_secs(2 * 60 * 60);

/// Opens one connection: the URL's own settings (several hosts, `target_session_attrs`), with,
/// for what the URL leaves out, the settings that let a failover end in seconds:
///
/// - each host is given its share of `timeout` to connect (at least 500 ms), so a host that
///   swallows packets cannot use the whole wait before the next host is tried;
/// - TCP keepalives after 1 s of silence, every second, and a TCP user timeout of `timeout`
///   (at least 1 s): a connection to a machine that vanished (no reset ever comes) is closed
///   about a second after `timeout`, where the system's defaults wait for hours. A long query
///   is not cut: the server's system answers the probes while it runs.
///
/// Every connection (the pools, the `LISTEN` loops, migrations) is made here.
pub(crate) async fn establish(url: String, timeout: Duration) -> Result<AsyncPgConnection, ConnectionError> {
    let mut config: tokio_postgres::Config =
        url.parse().map_err(|e: tokio_postgres::Error| ConnectionError::InvalidConnectionUrl(e.to_string()))?;
    failover_defaults(&mut config, timeout);
    let (client, connection) =
        config.connect(tokio_postgres::NoTls).await.map_err(|e| ConnectionError::BadConnection(e.to_string()))?;
    AsyncPgConnection::try_from_client_and_connection(client, connection).await
}

fn failover_defaults(config: &mut tokio_postgres::Config, timeout: Duration) {
    if config.get_connect_timeout().is_none() {
        let hosts = u32::try_from(config.get_hosts().len().max(1)).unwrap_or(u32::MAX);
        config.connect_timeout((timeout / hosts).max(Duration::from_millis(500)));
    }
    if config.get_keepalives() && config.get_keepalives_idle() == DEFAULT_KEEPALIVES_IDLE {
        config.keepalives_idle(Duration::from_secs(1));
        if config.get_keepalives_interval().is_none() {
            config.keepalives_interval(Duration::from_secs(1));
        }
        if config.get_keepalives_retries().is_none() {
            config.keepalives_retries(3);
        }
    }
    if config.get_tcp_user_timeout().is_none() {
        config.tcp_user_timeout(timeout.max(Duration::from_secs(1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_without_timeouts_gets_the_failover_defaults() {
        let mut c: tokio_postgres::Config =
            "postgres://app@10.0.0.1:5432,10.0.0.2:5432/shop?target_session_attrs=read-write".parse().unwrap();
        failover_defaults(&mut c, Duration::from_secs(2));
        assert_eq!(c.get_connect_timeout(), Some(&Duration::from_secs(1)));
        assert_eq!(c.get_keepalives_idle(), Duration::from_secs(1));
        assert_eq!(c.get_keepalives_interval(), Some(Duration::from_secs(1)));
        assert_eq!(c.get_keepalives_retries(), Some(3));
        assert_eq!(c.get_tcp_user_timeout(), Some(&Duration::from_secs(2)));
        assert_eq!(c.get_target_session_attrs(), tokio_postgres::config::TargetSessionAttrs::ReadWrite);
    }

    #[test]
    fn the_url_s_own_settings_win_and_a_host_gets_at_least_half_a_second() {
        let mut c: tokio_postgres::Config =
            "postgres://app@a,b,c,d,e/shop?connect_timeout=7&keepalives_idle=60&tcp_user_timeout=30".parse().unwrap();
        failover_defaults(&mut c, Duration::from_secs(2));
        assert_eq!(c.get_connect_timeout(), Some(&Duration::from_secs(7)));
        assert_eq!(c.get_keepalives_idle(), Duration::from_secs(60));
        assert_eq!(c.get_tcp_user_timeout(), Some(&Duration::from_secs(30)));
        let mut many: tokio_postgres::Config = "postgres://app@a,b,c,d,e/shop".parse().unwrap();
        failover_defaults(&mut many, Duration::from_secs(2));
        assert_eq!(many.get_connect_timeout(), Some(&Duration::from_millis(500)));
    }
}
