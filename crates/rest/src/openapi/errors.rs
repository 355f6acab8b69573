//! The error codes of each operation, stated in the OpenAPI document: every error response of
//! an operation lists the codes it can carry (`error.code` is an enum per operation and status),
//! so a partner's generated client knows them and a contract test fails on an undocumented one
//! (schemathesis' response schema check runs against it in CI).

use serde_json::{Value, json};
use stablepay_http::error::{ErrorCode, ErrorCode as C};

/// Codes any request can meet: a body too large or too slow, the database away, a failure.
const EVERY: &[ErrorCode] =
    &[C::VALIDATION_ERROR, C::REQUEST_TOO_LARGE, C::REQUEST_TIMEOUT, C::INTERNAL_SERVER_ERROR, C::SERVICE_UNAVAILABLE];

/// Codes of authenticated routes.
const AUTH: &[ErrorCode] =
    &[C::API_KEY_REQUIRED, C::INVALID_API_KEY, C::API_KEY_FORBIDDEN, C::PERMISSION_DENIED, C::ACCOUNT_SUSPENDED];

/// Codes of the routes that take an Idempotency-Key.
const IDEMPOTENT: &[ErrorCode] = &[C::INVALID_IDEMPOTENCY_KEY, C::IDEMPOTENCY_KEY_CONFLICT];

const INVOICE: &[ErrorCode] = &[C::INVOICE_NOT_FOUND, C::MODE_MISMATCH];
const INVOICE_CHANGE: &[ErrorCode] = &[
    C::INVOICE_NOT_FOUND,
    C::MODE_MISMATCH,
    C::INVOICE_STATE_MISMATCH,
    C::INVOICE_TRANSITION_GUARD_FAILED,
    C::INVOICE_NOT_EDITABLE,
];
const CONTENT: &[ErrorCode] = &[
    C::INVALID_AMOUNT,
    C::INVALID_EXPIRY,
    C::INVALID_TOTAL,
    C::CURRENCY_MISMATCH,
    C::CUSTOMER_EMAIL_REQUIRED,
    C::ACTIVE_MERCHANT_REQUIRED,
];
const LINK: &[ErrorCode] = &[C::PAYMENT_LINK_NOT_FOUND, C::MODE_MISMATCH];
const LINK_CONTENT: &[ErrorCode] =
    &[C::INVALID_AMOUNT, C::CURRENCY_MISMATCH, C::MODE_MISMATCH, C::ACTIVE_MERCHANT_REQUIRED];
const ENDPOINT: &[ErrorCode] = &[C::WEBHOOK_ENDPOINT_NOT_FOUND, C::MODE_MISMATCH, C::FEATURE_UNAVAILABLE];

/// The codes of each operation besides [`EVERY`], [`AUTH`] (authenticated ones) and
/// [`IDEMPOTENT`] (those with the header): the operations and the lists of their codes.
const SPECIFIC: &[(&[&str], &[&[ErrorCode]])] = &[
    (
        &["create_checkout_session"],
        &[&[C::PUBLIC_KEY_FIELD_NOT_ALLOWED, C::RATE_LIMIT_EXCEEDED, C::INVOICE_NOT_PAYABLE], CONTENT],
    ),
    (
        &["get_checkout_session", "get_payment", "get_event", "checkout_diagnostics", "payment_diagnostics"],
        &[&[C::NOT_FOUND, C::MODE_MISMATCH]],
    ),
    (&["list_events"], &[&[C::WEBHOOK_EVENT_UNSUPPORTED]]),
    (&["get_unattributed"], &[&[C::NOT_FOUND]]),
    (
        &["attribute_transfer"],
        &[&[
            C::NOT_FOUND,
            C::MODE_MISMATCH,
            C::CHECKOUT_SESSION_NOT_PAYABLE,
            C::TRANSFER_ALREADY_ATTRIBUTED,
            C::INVOICE_STATE_MISMATCH,
        ]],
    ),
    (&["create_invoice"], &[CONTENT]),
    (&["get_invoice", "duplicate_invoice"], &[INVOICE]),
    (&["update_invoice"], &[INVOICE_CHANGE, CONTENT, &[C::INVOICE_VERSION_CONFLICT]]),
    (
        &["issue_invoice"],
        &[
            INVOICE_CHANGE,
            &[
                C::INVOICE_VERSION_CONFLICT,
                C::INVOICE_ALREADY_ISSUED,
                C::CUSTOMER_EMAIL_REQUIRED,
                C::INVOICE_NOT_PAYABLE,
            ],
            CONTENT,
        ],
    ),
    (&["open_checkout"], &[INVOICE_CHANGE, &[C::INVOICE_NOT_PAYABLE, C::ACTIVE_MERCHANT_REQUIRED]]),
    (&["void_invoice", "void_remaining", "mark_uncollectible"], &[INVOICE_CHANGE]),
    (&["send_invoice", "remind_invoice"], &[INVOICE_CHANGE, &[C::CUSTOMER_EMAIL_REQUIRED, C::INVOICE_NOT_PAYABLE]]),
    (&["invoice_pdf"], &[INVOICE, &[C::INVOICE_PDF_UNAVAILABLE]]),
    (
        &["refund_reference"],
        &[
            INVOICE_CHANGE,
            &[C::INVALID_AMOUNT, C::INVALID_TX_HASH, C::INVALID_WALLET_ADDRESS, C::INVALID_DEPOSIT_NETWORK],
        ],
    ),
    (&["list_links"], &[&[C::INVALID_AMOUNT]]),
    (&["create_link"], &[LINK_CONTENT, &[C::AMOUNT_OUT_OF_RANGE]]),
    (&["get_link", "link_payments"], &[LINK]),
    (
        &["update_link"],
        &[LINK, LINK_CONTENT, &[C::PAYMENT_LINK_VERSION_CONFLICT, C::AMOUNT_OUT_OF_RANGE, C::LINK_INACTIVE]],
    ),
    (
        &["pause_link", "resume_link", "archive_link", "duplicate_link"],
        &[LINK, &[C::LINK_INACTIVE, C::LINK_EXPIRED, C::LINK_ALREADY_USED, C::LINK_RESERVED]],
    ),
    (&["get_public_checkout", "get_public_invoice", "public_invoice_pdf"], &[&[C::NOT_FOUND, C::INVOICE_NOT_FOUND]]),
    (
        &["submit_payment"],
        &[&[C::NOT_FOUND, C::INVALID_TX_HASH, C::CHECKOUT_SESSION_NOT_PAYABLE, C::FEATURE_UNAVAILABLE]],
    ),
    (
        &["wallet_payment_attempt"],
        &[&[
            C::NOT_FOUND,
            C::INVALID_WALLET_PAYMENT_ATTEMPT,
            C::INVALID_DEPOSIT_NETWORK,
            C::WALLET_PAYMENTS_UNAVAILABLE,
            C::CHECKOUT_SESSION_NOT_PAYABLE,
        ]],
    ),
    (
        &["relay_authorization"],
        &[&[
            C::NOT_FOUND,
            C::INVALID_WALLET_PAYMENT_ATTEMPT,
            C::WALLET_PAYMENTS_UNAVAILABLE,
            C::CHECKOUT_SESSION_NOT_PAYABLE,
            C::FEATURE_UNAVAILABLE,
            C::AUTHORIZATION_USED,
            C::AUTHORIZATION_EXPIRED,
            C::AUTHORIZATION_REJECTED,
            C::PAYER_BALANCE_INSUFFICIENT,
        ]],
    ),
    (&["get_relayed_authorization"], &[&[C::NOT_FOUND]]),
    (&["checkout_telemetry"], &[&[C::NOT_FOUND]]),
    (
        &["public_invoice_checkout"],
        &[&[
            C::NOT_FOUND,
            C::INVOICE_NOT_FOUND,
            C::INVOICE_NOT_PAYABLE,
            C::INVOICE_STATE_MISMATCH,
            C::INVOICE_TRANSITION_GUARD_FAILED,
        ]],
    ),
    (&["get_public_link"], &[&[C::PAYMENT_LINK_NOT_FOUND, C::NOT_FOUND]]),
    (
        &["public_link_checkout"],
        &[&[
            C::PAYMENT_LINK_NOT_FOUND,
            C::NOT_FOUND,
            C::INVALID_AMOUNT,
            C::AMOUNT_OUT_OF_RANGE,
            C::FIELD_REQUIRED,
            C::LINK_INACTIVE,
            C::LINK_EXPIRED,
            C::LINK_ALREADY_USED,
            C::LINK_RESERVED,
            C::MODE_UNAVAILABLE,
            C::CONFIG_CHANGED,
        ]],
    ),
    (
        &["simulate_payment"],
        &[&[
            C::NOT_FOUND,
            C::MODE_MISMATCH,
            C::INVALID_AMOUNT,
            C::INVALID_TX_HASH,
            C::CHECKOUT_SESSION_NOT_PAYABLE,
            C::INVOICE_STATE_MISMATCH,
        ]],
    ),
    (&["create_export"], &[&[C::EXPORT_RANGE_TOO_LARGE, C::EXPORT_SCHEMA_UNSUPPORTED]]),
    (&["sync_export"], &[&[C::EXPORT_RANGE_TOO_LARGE, C::EXPORT_SCHEMA_UNSUPPORTED, C::EXPORT_TOO_LARGE_FOR_SYNC]]),
    (&["get_export"], &[&[C::NOT_FOUND, C::MODE_MISMATCH]]),
    (&["cancel_export"], &[&[C::NOT_FOUND, C::MODE_MISMATCH, C::EXPORT_NOT_CANCELLABLE]]),
    (
        &["export_file"],
        &[&[C::NOT_FOUND, C::MODE_MISMATCH, C::EXPORT_NOT_READY, C::EXPORT_CANCELLED, C::EXPORT_EXPIRED]],
    ),
    (&["reconciliation"], &[&[C::EXPORT_RANGE_TOO_LARGE]]),
    (&["create_run"], &[&[C::EXPORT_RANGE_TOO_LARGE, C::FEATURE_UNAVAILABLE, C::ACTIVE_MERCHANT_REQUIRED]]),
    (&["get_run", "run_items"], &[&[C::NOT_FOUND, C::MODE_MISMATCH]]),
    (&["list_deliveries"], &[&[C::WEBHOOK_EVENT_UNSUPPORTED]]),
    (
        &["get_delivery", "replay_delivery"],
        &[&[
            C::WEBHOOK_DELIVERY_NOT_FOUND,
            C::WEBHOOK_ENDPOINT_NOT_FOUND,
            C::MODE_MISMATCH,
            C::WEBHOOK_ENDPOINT_DISABLED,
        ]],
    ),
    (&["create_endpoint"], &[&[C::WEBHOOK_EVENT_UNSUPPORTED, C::FEATURE_UNAVAILABLE]]),
    (&["get_endpoint", "delete_endpoint", "list_incidents"], &[ENDPOINT]),
    (&["update_endpoint"], &[ENDPOINT, &[C::WEBHOOK_EVENT_UNSUPPORTED]]),
    (
        &["rotate_secret", "end_secret_overlap"],
        &[ENDPOINT, &[C::SECRET_OVERLAP_ACTIVE, C::SECRET_OVERLAP_EXPIRED, C::WEBHOOK_ENDPOINT_DISABLED]],
    ),
    (&["get_incident"], &[&[C::WEBHOOK_INCIDENT_NOT_FOUND, C::MODE_MISMATCH]]),
    (
        &["send_test"],
        &[&[
            C::WEBHOOK_EVENT_UNSUPPORTED,
            C::WEBHOOK_ENDPOINT_NOT_FOUND,
            C::WEBHOOK_ENDPOINT_DISABLED,
            C::FEATURE_UNAVAILABLE,
        ]],
    ),
];

/// The codes of `operation` in [`SPECIFIC`].
fn specific(operation: &str) -> Vec<ErrorCode> {
    SPECIFIC
        .iter()
        .filter(|(operations, _)| operations.contains(&operation))
        .flat_map(|(_, lists)| lists.iter().flat_map(|codes| codes.iter().copied()))
        .collect()
}

/// The operations answered without a key.
fn is_public(operation: &str) -> bool {
    matches!(
        operation,
        "get_public_checkout"
            | "submit_payment"
            | "wallet_payment_attempt"
            | "relay_authorization"
            | "get_relayed_authorization"
            | "checkout_telemetry"
            | "get_public_invoice"
            | "public_invoice_pdf"
            | "public_invoice_checkout"
            | "get_public_link"
            | "public_link_checkout"
    )
}

/// The codes of the dashboard's routes (no API key: a session cookie, or none).
fn dashboard(operation: &str) -> Option<&'static [ErrorCode]> {
    const SESSION: &[ErrorCode] = &[C::AUTH_REQUIRED];
    const CHANGE: &[ErrorCode] = &[C::AUTH_REQUIRED, C::AUTH_FORBIDDEN];
    const TEAM: &[ErrorCode] = &[C::AUTH_REQUIRED, C::AUTH_FORBIDDEN, C::NOT_FOUND];
    match operation {
        "create_session" => Some(&[C::INVALID_CREDENTIALS, C::RATE_LIMITED]),
        "signup" => Some(&[C::FEATURE_UNAVAILABLE, C::RATE_LIMITED]),
        "request_reset" => Some(&[C::RATE_LIMITED]),
        "confirm_reset" | "confirm_verification" => Some(&[C::NOT_FOUND]),
        "accept_invitation" => Some(&[C::INVALID_CREDENTIALS, C::NOT_FOUND, C::RATE_LIMITED]),
        "get_session" | "get_two_factor" => Some(SESSION),
        "resend_verification" => Some(&[C::AUTH_REQUIRED, C::AUTH_FORBIDDEN, C::RATE_LIMITED]),
        "change_password" | "disable_two_factor" | "reauthenticate" => {
            Some(&[C::AUTH_REQUIRED, C::AUTH_FORBIDDEN, C::INVALID_CREDENTIALS, C::RATE_LIMITED])
        }
        "start_two_factor" => Some(&[C::AUTH_REQUIRED, C::AUTH_FORBIDDEN, C::FEATURE_UNAVAILABLE]),
        "end_session" | "end_all_sessions" | "confirm_two_factor" => Some(CHANGE),
        "list_members" | "change_member" | "remove_member" | "list_invitations" | "revoke_invitation"
        | "set_security" | "audit_log" => Some(TEAM),
        "create_invitation" => Some(&[C::AUTH_REQUIRED, C::AUTH_FORBIDDEN, C::NOT_FOUND, C::FEATURE_UNAVAILABLE]),
        "get_settlement" | "set_notifications" => Some(TEAM),
        "set_settlement_wallet" => Some(&[
            C::AUTH_REQUIRED,
            C::AUTH_FORBIDDEN,
            C::NOT_FOUND,
            C::INVALID_CREDENTIALS,
            C::RATE_LIMITED,
            C::INVALID_WALLET_ADDRESS,
            C::UNSUPPORTED_DEFAULT_WALLET,
        ]),
        "request_live_activation" => {
            Some(&[C::AUTH_REQUIRED, C::AUTH_FORBIDDEN, C::NOT_FOUND, C::DEFAULT_WALLET_REQUIRED, C::ACCOUNT_SUSPENDED])
        }
        "set_unique_amounts" => Some(&[C::AUTH_REQUIRED, C::AUTH_FORBIDDEN, C::NOT_FOUND, C::ACTIVE_MERCHANT_REQUIRED]),
        "dashboard_unattributed" => Some(TEAM),
        "dashboard_attribute" => Some(&[
            C::AUTH_REQUIRED,
            C::AUTH_FORBIDDEN,
            C::NOT_FOUND,
            C::INVALID_CREDENTIALS,
            C::RATE_LIMITED,
            C::MODE_MISMATCH,
            C::CHECKOUT_SESSION_NOT_PAYABLE,
            C::TRANSFER_ALREADY_ATTRIBUTED,
            C::INVOICE_STATE_MISMATCH,
        ]),
        _ => None,
    }
}

/// Every code an operation can answer with.
pub fn codes_of(operation: &str, idempotent: bool) -> Vec<ErrorCode> {
    let mut codes: Vec<ErrorCode> = EVERY.to_vec();
    if let Some(own) = dashboard(operation) {
        codes.extend_from_slice(own);
    } else if is_public(operation) {
        // Public routes are limited per client address (RATE_LIMITED, with Retry-After).
        codes.push(C::RATE_LIMITED);
    } else {
        codes.extend_from_slice(AUTH);
    }
    if idempotent {
        codes.extend_from_slice(IDEMPOTENT);
    }
    codes.extend(specific(operation));
    let mut seen = Vec::new();
    codes.retain(|c| {
        let new = !seen.contains(c);
        seen.push(*c);
        new
    });
    codes
}

/// Rewrites each operation's error responses: one per status its codes have, each with the
/// envelope's `error.code` narrowed to those codes and the codes named in the description.
pub fn refine(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else { return };
    for ops in paths.values_mut() {
        let Some(ops) = ops.as_object_mut() else { continue };
        for op in ops.values_mut() {
            let Some(id) = op.get("operationId").and_then(Value::as_str).map(str::to_owned) else { continue };
            // Probes and the document itself answer no error envelope of their own.
            if matches!(id.as_str(), "healthz" | "readyz" | "openapi_json") {
                continue;
            }
            let idempotent = op
                .get("parameters")
                .and_then(Value::as_array)
                .is_some_and(|ps| ps.iter().any(|p| p["name"] == "Idempotency-Key"));
            let codes = codes_of(&id, idempotent);
            let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else { continue };
            // The generic error responses give way to the operation's own.
            responses.retain(|status, _| !status.starts_with('4') && !status.starts_with('5'));
            let mut statuses: Vec<u16> = codes.iter().map(|c| c.status().as_u16()).collect();
            statuses.sort_unstable();
            statuses.dedup();
            for status in statuses {
                let names: Vec<&str> =
                    codes.iter().filter(|c| c.status().as_u16() == status).map(|c| c.as_str()).collect();
                responses.insert(
                    status.to_string(),
                    json!({
                        "description": names.join(", "),
                        "content": { "application/json": { "schema": { "allOf": [
                            { "$ref": "#/components/schemas/ErrorEnvelope" },
                            { "type": "object", "properties": { "error": { "type": "object",
                                "properties": { "code": { "type": "string", "enum": names } } } } }
                        ] } } }
                    }),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code the service has is documented on some operation (or is one of the few that
    /// no route of this version answers yet).
    #[test]
    fn every_code_belongs_to_an_operation() {
        let doc = crate::api::document();
        let text = doc.to_string();
        let unused = [
            // Codes of the spec's later features (operator auth, wallets) and of routes
            // not in this version.
            "DEFAULT_WALLET_REQUIRED",
            "UNSUPPORTED_DEFAULT_WALLET",
            "SCAN_OR_COPY_UNAVAILABLE",
            "WEBHOOK_SIGNATURE_INVALID",
            "REQUEST_ERROR",
            "METHOD_NOT_ALLOWED",
            "INTERNAL_JOB_UNAUTHORIZED",
        ];
        for code in ErrorCode::ALL {
            let quoted = format!("\"{}\"", code.as_str());
            assert!(text.contains(&quoted) || unused.contains(&code.as_str()), "{} is on no operation", code.as_str());
        }
    }
}
