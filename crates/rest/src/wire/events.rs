//! Events and unattributed transfers.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use stablepay_domain::chain::model::UnattributedTransfer;
use stablepay_domain::event::model::{Event, EventData};
use stablepay_http::timestamp::timestamp;
use utoipa::ToSchema;

use crate::wire::checkout::BlockOut;
use crate::wire::common::{ListOut, envelope};

/// An event's envelope, with `data` of its type: the event as the API lists it, and the body
/// of a webhook delivery.
macro_rules! event_schema {
    ($(#[$doc:meta])* $name:ident, $(#[$data_attr:meta])* $data:ty) => {
        $(#[$doc])*
        #[derive(Serialize, ToSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            /// The event id: the receiver's deduplication key.
            pub id: String,
            /// The literal `event`.
            pub object: String,
            /// One of the supported event types, e.g. `invoice.paid`.
            #[serde(rename = "type")]
            pub event_type: String,
            /// `test` or `live`.
            pub mode: String,
            pub created_at: String,
            $(#[$data_attr])*
            pub data: $data,
        }
    };
}
pub(crate) use event_schema;

event_schema!(/// An event (the spec's event envelope).
    EventOut,
    /// Snapshot of the facts at emission time.
    #[schema(value_type = Object)]
    Value);

/// Renders domain event data as JSON.
pub fn event_data_json(data: &EventData) -> Value {
    match data {
        EventData::Null => Value::Null,
        EventData::Bool(b) => Value::Bool(*b),
        EventData::Int(i) => Value::from(*i),
        EventData::String(s) => Value::String(s.clone()),
        EventData::List(items) => Value::Array(items.iter().map(event_data_json).collect()),
        EventData::Map(pairs) => {
            Value::Object(pairs.iter().map(|(k, v)| (k.clone(), event_data_json(v))).collect::<Map<_, _>>())
        }
    }
}

impl From<Event> for EventOut {
    fn from(e: Event) -> Self {
        Self {
            id: e.id.to_string(),
            object: "event".into(),
            event_type: e.event_type.as_str().into(),
            mode: e.scope.mode.as_str().into(),
            created_at: timestamp(e.created_at),
            data: event_data_json(&e.data),
        }
    }
}

envelope!(/// One event.
    EventEnvelope, EventOut);
envelope!(/// A page of events.
    EventListEnvelope, ListOut<EventOut>);

/// A transfer into the merchant's live wallet that no checkout could be credited with.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnattributedTransferOut {
    pub id: String,
    /// The literal `unattributed_transfer`.
    pub object: String,
    pub mode: String,
    pub chain_id: u64,
    pub transaction_hash: String,
    pub log_index: u64,
    pub block: BlockOut,
    /// USDC or USDT.
    pub currency_code: String,
    pub token_contract: String,
    pub from: String,
    pub to: String,
    pub amount: String,
    /// no_open_checkout, no_matching_amount, several_matching_checkouts (twins asking its
    /// amount), amount_out_of_range, verification_failed or disputed (evidence of equal
    /// strength names several checkouts: held for a person).
    pub reason: String,
    /// The merchant's checkouts the evidence names, for `disputed` and
    /// `several_matching_checkouts` (empty otherwise): one of them is likely the customer's.
    pub candidates: Vec<String>,
    /// When its block was mined (the chain's clock).
    pub block_time: String,
    pub detected_at: String,
    /// `open` (nobody was credited with it) or `attributed` (credited since: by a report, the
    /// follower, or a person).
    pub status: String,
    /// The merchant's payment that credited it, once attributed (null when another merchant
    /// sharing the wallet was credited).
    pub payment_id: Option<String>,
    /// When it was credited.
    pub attributed_at: Option<String>,
}

impl From<UnattributedTransfer> for UnattributedTransferOut {
    fn from(t: UnattributedTransfer) -> Self {
        let l = t.logged;
        Self {
            id: t.id.to_string(),
            object: "unattributed_transfer".into(),
            mode: t.scope.mode.as_str().into(),
            chain_id: t.chain_id,
            transaction_hash: l.tx_hash.as_str().into(),
            log_index: l.transfer.log_index,
            block: BlockOut { number: l.block.number, hash: l.block.hash },
            currency_code: t.token.symbol().into(),
            token_contract: l.transfer.token_contract.to_string(),
            from: l.transfer.from.to_string(),
            to: l.transfer.to.to_string(),
            amount: l.transfer.amount.to_string(),
            reason: t.reason.as_str().into(),
            candidates: t.candidates.iter().map(ToString::to_string).collect(),
            block_time: timestamp(l.block_time),
            detected_at: timestamp(t.detected_at),
            status: t.status.as_str().into(),
            payment_id: t.payment_id.as_ref().map(ToString::to_string),
            attributed_at: t.attributed_at.map(timestamp),
        }
    }
}
envelope!(/// One unattributed transfer.
    UnattributedEnvelope, UnattributedTransferOut);

/// `POST /v1/unattributed-transfers/{id}/attribute` body.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AttributeIn {
    /// The checkout the transfer pays (`cs_...`, of the same merchant and mode).
    #[schema(example = "cs_4kQ8nX2mB7vR9sT1wY3zA5")]
    pub checkout_session_id: String,
    /// Why (1-500 bytes); kept in the invoice's activity with who decided.
    #[schema(example = "The customer sent order 1001's payment and wrote to support")]
    pub reason: String,
}
envelope!(/// A page of unattributed transfers.
    UnattributedListEnvelope, crate::wire::common::ListOut<UnattributedTransferOut>);
