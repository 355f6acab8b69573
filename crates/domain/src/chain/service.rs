//! Detection: following the live chain for token transfers into merchants' settlement wallets,
//! so a customer who paid without reporting the hash is still credited when the transfer can be
//! attributed to exactly one open checkout. Anything else is recorded as unattributed for the
//! merchant (with a `payment.unattributed` event): never guessed, never lost.
//!
//! Only final blocks are scanned, from a stored cursor that any number of workers may advance
//! (each step is idempotent: an attributed transfer finds its payment already recorded, an
//! unattributed one its record).

use crate::chain::model::{LoggedTransfer, UnattributedTransfer};
use crate::chain::ports::FollowerStore;
use crate::chain::verify::attribute;
use crate::error::Error;
use crate::event::model::{Event, EventType};
use crate::ids::{EventId, PaymentId, UnattributedTransferId};
use crate::invoice::payment::TxHash;
use crate::invoice::service::Invoices;
use crate::mode::{Mode, Scope};
use crate::page::{Page, PageRequest};

/// At most this many blocks are scanned in one step.
pub const MAX_BLOCKS_PER_SCAN: u64 = 500;

/// What one step of following did.
#[derive(Debug, Default, PartialEq)]
pub struct FollowReport {
    /// The newest final block, as the chain answered it.
    pub final_head: Option<u64>,
    /// The last block scanned, if any.
    pub scanned_to: Option<u64>,
    /// Payments recorded for attributed transfers.
    pub detected: Vec<(Scope, PaymentId, TxHash)>,
    /// Unattributed transfers recorded (new ones only).
    pub unattributed: usize,
}

/// The follower over the invoice use cases and its store.
pub struct Follower<'a> {
    /// The invoice use cases that verify and credit what the follower finds.
    pub invoices: Invoices<'a>,
    /// Where the follower keeps its position on the chain and the transfers it saw.
    pub store: &'a dyn FollowerStore,
}

impl Follower<'_> {
    /// A page of `scope`'s unattributed transfers, newest first. Errors: `InvalidCursor`.
    pub async fn unattributed(&self, scope: &Scope, page: &PageRequest) -> Result<Page<UnattributedTransfer>, Error> {
        self.store.list_unattributed(scope, page).await
    }

    /// Scans the next range of final blocks. The first step starts at the current final block:
    /// transfers made before the service watched are not searched for.
    pub async fn follow(&self) -> Result<FollowReport, Error> {
        let b = &self.invoices;
        let chain_id = b.settings.chain_id;
        let head = b.chain.final_head().await?;
        let mut report = FollowReport { final_head: Some(head), ..FollowReport::default() };
        let Some(from) = self.store.scan_cursor(chain_id).await? else {
            self.store.move_cursor(chain_id, None, head.saturating_add(1)).await?;
            return Ok(report);
        };
        if from > head {
            return Ok(report);
        }
        let to = head.min(from.saturating_add(MAX_BLOCKS_PER_SCAN - 1));
        let wallets = self.store.live_settlement_wallets().await?;
        if !wallets.is_empty() {
            let tokens = [b.settings.usdc.clone(), b.settings.usdt.clone()];
            for logged in b.chain.transfers(from, to, &tokens, &wallets).await? {
                self.handle(&logged, &mut report).await?;
            }
        }
        self.store.move_cursor(chain_id, Some(from), to.saturating_add(1)).await?;
        report.scanned_to = Some(to);
        Ok(report)
    }

    async fn handle(&self, logged: &LoggedTransfer, report: &mut FollowReport) -> Result<(), Error> {
        let b = &self.invoices;
        if self.store.live_payment_exists(b.settings.chain_id, &logged.tx_hash).await? {
            // Reported by the customer (or an earlier log of the same transaction): verified
            // as that payment, which sums every transfer of the transaction to the wallet.
            return Ok(());
        }
        let t = &logged.transfer;
        let now = b.clock.system_now();
        let open = self.store.open_checkouts(&t.to, &t.token_contract, now).await?;
        match attribute(&t.amount, &open) {
            Ok(checkout) => {
                let payment = b.record_detected(&checkout.scope, &checkout.session_id, &logged.tx_hash).await?;
                report.detected.push((checkout.scope.clone(), payment.id, logged.tx_hash.clone()));
            }
            Err(reason) => {
                let Some(token) = b.settings.token_of(&t.token_contract) else { return Ok(()) };
                for merchant in self.store.merchants_with_wallet(&t.to).await? {
                    let scope = Scope::new(merchant, Mode::Live);
                    let transfer = UnattributedTransfer {
                        id: UnattributedTransferId::generate(b.crypto),
                        scope: scope.clone(),
                        chain_id: b.settings.chain_id,
                        logged: logged.clone(),
                        token,
                        reason,
                        detected_at: now,
                    };
                    let event = Event {
                        id: EventId::generate(b.crypto),
                        scope,
                        event_type: EventType::PaymentUnattributed,
                        created_at: now,
                        data: transfer.event_data(),
                    };
                    if self.store.record_unattributed(&transfer, &event).await? {
                        report.unattributed += 1;
                    }
                }
            }
        }
        Ok(())
    }
}
