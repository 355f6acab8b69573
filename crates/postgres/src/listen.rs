//! One `LISTEN` loop for every channel the service follows: a connection of its own, opened
//! again after a loss with a growing pause (200 ms doubled, at most 12.8 s), for as long as its
//! owner wants it.

use diesel_async::RunQueryDsl;
use futures_util::StreamExt;

/// How long a `LISTEN` connection may take to open.
const CONNECT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// What a listener does with its channel.
pub(crate) trait Listener: Send + 'static {
    /// Whether to go on listening (its owner still exists).
    fn wanted(&self) -> bool;
    /// Listening from now on: notifications sent while the connection was down are lost.
    fn listening(&self);
    /// A notification with its payload.
    fn notified(&self, payload: &str);
    /// Not listening: the connection was lost or could not be made, or the loop ends.
    fn lost(&self);
}

/// A channel and the words its log lines use.
pub(crate) struct Channel {
    /// The channel's name.
    pub name: &'static str,
    /// What the connection is for ("key-change", "webhook notification").
    pub what: &'static str,
    /// What happens while it is down ("keys are looked up every time").
    pub meanwhile: &'static str,
}

/// Listens on `channel` until `listener` is no longer wanted.
pub(crate) fn listen(database_url: String, channel: Channel, listener: impl Listener) -> tokio::task::JoinHandle<()> {
    let Channel { name, what, meanwhile } = channel;
    tokio::spawn(async move {
        let mut failures: u32 = 0;
        while listener.wanted() {
            match crate::connect::establish(database_url.clone(), CONNECT_WAIT).await {
                Ok(mut conn) => {
                    if let Err(e) = diesel::sql_query(format!("LISTEN {name}")).execute(&mut conn).await {
                        tracing::warn!(error = %e, "LISTEN on the {what} connection failed; {meanwhile} meanwhile");
                    } else {
                        failures = 0;
                        listener.listening();
                        let mut stream = std::pin::pin!(conn.notifications_stream());
                        while let Some(Ok(note)) = stream.next().await {
                            listener.notified(&note.payload);
                        }
                        listener.lost();
                        tracing::warn!("the {what} connection closed; opening it again");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot open the {what} connection; {meanwhile} meanwhile"),
            }
            failures = failures.saturating_add(1);
            tokio::time::sleep(std::time::Duration::from_millis(200u64 << failures.min(6))).await;
        }
        listener.lost();
    })
}
