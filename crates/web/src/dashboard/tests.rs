//! Handler tests of the dashboard's pages over mocked ports: who is refused what, and what each
//! role is offered. The browser walk (`crates/app/tests/api/dashboard*`) covers the rest.

use std::sync::Arc;

use actix_web::dev::ServiceResponse;
use actix_web::http::StatusCode;
use actix_web::{App, test, web};
use chrono::{DateTime, Utc};
use stablepay_domain::account::Role;
use stablepay_domain::ids::MerchantId;
use stablepay_domain::invoice::aggregate::InvoiceAggregate;
use stablepay_domain::invoice::collection::CollectionState;
use stablepay_domain::merchant::model::MerchantStatus;
use stablepay_domain::money::Decimal6;
use stablepay_domain::ports::{MockAccountStore, MockClock, MockInvoiceStore, MockMerchantStore};
use stablepay_domain::testing::{idle_ports, member, merchant, open_invoice};
use stablepay_domain::use_cases::{Settings, UseCases};
use stablepay_http::state::AppState;
use stablepay_http::status::WorkerStatus;

/// A session cookie's token (43 alphanumerics; the mocked store knows any token).
const TOKEN: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ";

fn at() -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000, 0).unwrap()
}

fn mer() -> MerchantId {
    MerchantId::from_trusted("mer_1".into())
}

/// The dashboard's state over mocks: a member of `mer_1` with `role` signed in (the session of
/// any token), the merchant `mer_1`, and `invoice` for any invoice id when given (without one,
/// a read of an invoice fails the test).
fn state(role: Role, invoice: Option<InvoiceAggregate>) -> web::Data<AppState> {
    state_of(member(&mer(), role), invoice, |_| {}, |_| {})
}

/// The dashboard's state over mocks with `current` signed in, `invoice` as [`state`] has it,
/// the account store given what else a page reads of it (`more`), and the other ports as
/// `other` sets them.
fn state_of(
    current: stablepay_domain::account::service::Current,
    invoice: Option<InvoiceAggregate>,
    more: impl FnOnce(&mut MockAccountStore),
    other: impl FnOnce(&mut stablepay_domain::use_cases::Ports),
) -> web::Data<AppState> {
    let mut ports = idle_ports();
    other(&mut ports);
    let mut accounts = MockAccountStore::new();
    more(&mut accounts);
    let (session, user) = (current.session.clone(), current.user.clone());
    accounts.expect_session_by_digest().returning(move |_| Ok(Some((session.clone(), user.clone()))));
    let memberships = current.memberships.clone();
    accounts.expect_memberships().returning(move |_| Ok(memberships.clone()));
    ports.accounts = Arc::new(accounts);
    let mut clock = MockClock::new();
    clock.expect_system_now().returning(at);
    clock.expect_now().returning(|_| Ok(at()));
    ports.clock = Arc::new(clock);
    let mut merchants = MockMerchantStore::new();
    merchants.expect_get_merchant().returning(|_| Ok(merchant(MerchantStatus::Active, at())));
    ports.merchants = Arc::new(merchants);
    if let Some(agg) = invoice {
        let mut invoices = MockInvoiceStore::new();
        invoices.expect_load_invoice().returning(move |_, _| Ok(agg.clone()));
        ports.invoices = Arc::new(invoices);
    }
    web::Data::new(AppState {
        use_cases: UseCases::new(ports, Settings::default()),
        worker: Arc::new(WorkerStatus::off(at())),
        trusted_proxies: Default::default(),
    })
}

/// The answer to `req` (the session cookie added unless `signed_in` is false), with its body.
async fn call(
    state: web::Data<AppState>,
    req: test::TestRequest,
    signed_in: bool,
) -> (StatusCode, String, Option<String>) {
    let app = test::init_service(App::new().app_data(state).configure(crate::configure)).await;
    let req = if signed_in { req.insert_header(("Cookie", format!("stablepay_session={TOKEN}"))) } else { req };
    let res: ServiceResponse = test::call_service(&app, req.to_request()).await;
    let status = res.status();
    let location = res.headers().get("location").and_then(|l| l.to_str().ok()).map(str::to_owned);
    let body = String::from_utf8(test::read_body(res).await.to_vec()).unwrap();
    (status, body, location)
}

fn page_of(agg: &InvoiceAggregate, mode: &str) -> String {
    format!("/dashboard/invoices/{}?merchant=mer_1&mode={mode}", agg.invoice.id)
}

/// The invoice actions a page's forms post to.
fn forms(agg: &InvoiceAggregate, body: &str) -> Vec<String> {
    let prefix = format!("action=\"/dashboard/invoices/{}/", agg.invoice.id);
    body.match_indices(&prefix)
        .map(|(i, _)| body[i + prefix.len()..].split(['?', '"']).next().unwrap_or_default().to_owned())
        .collect()
}

#[actix_web::test]
async fn without_a_session_every_page_sends_to_the_sign_in() {
    let agg = open_invoice("10").unwrap();
    for path in [page_of(&agg, "test"), "/dashboard/invoices".into(), "/dashboard/developers".into()] {
        let (status, _, location) = call(state(Role::Owner, None), test::TestRequest::get().uri(&path), false).await;
        assert_eq!((status, location.as_deref()), (StatusCode::SEE_OTHER, Some("/dashboard/login")), "{path}");
    }
}

#[actix_web::test]
async fn an_invoice_page_offers_each_role_what_the_domain_allows_it() {
    let agg = open_invoice("10").unwrap();
    let managing = ["send", "remind", "checkout", "void", "mark-uncollectible", "duplicate"];
    for (role, mode, offered) in [
        (Role::Owner, "live", managing.to_vec()),
        (Role::Developer, "test", managing.to_vec()),
        (Role::Developer, "live", vec![]),
        (Role::Support, "test", vec!["send", "remind", "checkout"]),
        (Role::Viewer, "test", vec![]),
    ] {
        let (status, body, _) =
            call(state(role, Some(agg.clone())), test::TestRequest::get().uri(&page_of(&agg, mode)), true).await;
        assert_eq!(status, StatusCode::OK, "{role:?} in {mode}");
        assert_eq!(forms(&agg, &body), offered, "{role:?} in {mode}");
        // The navigation shows the developers' section only to the roles that manage keys.
        let keys = matches!(role, Role::Owner | Role::Admin | Role::Developer);
        assert_eq!(body.contains("/dashboard/developers?"), keys, "{role:?}");
    }
}

#[actix_web::test]
async fn void_the_remainder_is_offered_for_a_past_due_invoice_paid_in_part() {
    let mut agg = open_invoice("10").unwrap();
    agg.invoice.customer_amount_paid = Decimal6::parse("4").unwrap();
    agg.invoice.collection_state = CollectionState::PastDue;
    let (_, body, _) =
        call(state(Role::Admin, Some(agg.clone())), test::TestRequest::get().uri(&page_of(&agg, "test")), true).await;
    assert!(forms(&agg, &body).contains(&"void-remaining".to_owned()), "{:?}", forms(&agg, &body));
    assert!(body.contains("Void the remainder"));
}

#[actix_web::test]
async fn a_refused_post_reads_nothing_and_says_why() {
    let agg = open_invoice("10").unwrap();
    let form = "csrfToken=csrf&reason=gone";
    let post = |action: &str| {
        test::TestRequest::post()
            .uri(&format!("/dashboard/invoices/{}/{action}?merchant=mer_1&mode=test", agg.invoice.id))
            .insert_header(("Content-Type", "application/x-www-form-urlencoded"))
            .set_payload(form)
    };
    // A viewer may not void: refused before the invoice is read (no invoice store is mocked).
    let (status, body, _) = call(state(Role::Viewer, None), post("void"), true).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(body.contains("Not allowed") && body.contains("AUTH_FORBIDDEN"), "{body}");
    // Support may not void either, though it may send.
    let (status, _, _) = call(state(Role::Support, None), post("void"), true).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // An action the page has no form for is not found.
    let (status, body, _) = call(state(Role::Owner, None), post("delete"), true).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body.contains("NOT_FOUND"));
}

#[actix_web::test]
async fn another_merchants_pages_are_not_found_and_a_role_without_the_section_is_refused() {
    let agg = open_invoice("10").unwrap();
    let theirs = format!("/dashboard/invoices/{}?merchant=mer_2&mode=test", agg.invoice.id);
    let (status, body, _) = call(state(Role::Owner, None), test::TestRequest::get().uri(&theirs), true).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body.contains("NOT_FOUND"));
    let developers = "/dashboard/developers?merchant=mer_1&mode=test";
    let (status, body, _) = call(state(Role::Viewer, None), test::TestRequest::get().uri(developers), true).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(body.contains("AUTH_FORBIDDEN"));
}

/// What the settings page reads of the account store: no live request, the member alone on the
/// team, no invitation (read only by a role that manages members).
fn settings_state(current: stablepay_domain::account::service::Current) -> web::Data<AppState> {
    let team = vec![(current.memberships[0].clone(), current.user.clone())];
    let manages = matches!(current.memberships[0].role, Role::Owner | Role::Admin);
    state_of(
        current,
        None,
        move |accounts| {
            accounts.expect_live_request().returning(|_| Ok(None));
            accounts.expect_members().returning(move |_| Ok(team.clone()));
            accounts.expect_invitations().times(usize::from(manages)).returning(|_, _| Ok(Vec::new()));
        },
        |_| {},
    )
}

#[actix_web::test]
async fn the_settings_page_offers_each_member_what_the_domain_allows_them() {
    let page = || test::TestRequest::get().uri("/dashboard/settings?merchant=mer_1&mode=test");
    let mut unverified = member(&mer(), Role::Owner);
    unverified.user.email_verified_at = None;
    for (current, wallet, activation, invite) in [
        (member(&mer(), Role::Owner), true, true, true),
        // Changing the live wallet needs a verified email; asking for activation (a test-mode
        // action) does not.
        (unverified, false, true, true),
        (member(&mer(), Role::Admin), false, false, true),
        (member(&mer(), Role::Developer), false, false, false),
        (member(&mer(), Role::Support), false, false, false),
        (member(&mer(), Role::Viewer), false, false, false),
    ] {
        let who = format!("{:?} verified {}", current.memberships[0].role, current.user.email_verified_at.is_some());
        let (status, body, _) = call(settings_state(current), page(), true).await;
        assert_eq!(status, StatusCode::OK, "{who}");
        assert_eq!(body.contains("action=\"/dashboard/settings/wallet?"), wallet, "{who}");
        assert_eq!(body.contains("action=\"/dashboard/settings/activation?"), activation, "{who}");
        assert_eq!(body.contains("action=\"/dashboard/settings/invitations?"), invite, "{who}");
        // Every member sets their own alerts.
        assert!(body.contains("action=\"/dashboard/settings/alerts?"), "{who}");
    }
}

#[actix_web::test]
async fn a_merchant_that_requires_two_factor_login_shows_nothing_until_the_member_enrols() {
    let mut current = member(&mer(), Role::Owner);
    current.memberships[0].requires_two_factor = true;
    // Nothing of the account store is read beyond the session: the refusal comes first.
    let state = state_of(current, None, |_| {}, |_| {});
    for path in ["/dashboard/settings?merchant=mer_1&mode=test", "/dashboard/invoices?merchant=mer_1&mode=test"] {
        let (status, body, _) = call(state.clone(), test::TestRequest::get().uri(path), true).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}");
        assert!(body.contains("two-factor"), "{path}: {body}");
    }
}

#[actix_web::test]
async fn the_webhooks_page_offers_endpoint_changes_to_the_roles_that_manage_them() {
    use stablepay_domain::page::Page;
    use stablepay_domain::ports::MockWebhookStore;
    for (role, manages) in [
        (Role::Owner, true),
        (Role::Admin, true),
        (Role::Developer, true),
        (Role::Support, false),
        (Role::Viewer, false),
    ] {
        let state = state_of(
            member(&mer(), role),
            None,
            |_| {},
            |ports| {
                let mut webhooks = MockWebhookStore::new();
                webhooks.expect_list_endpoints().returning(|_, _| Ok(Page { items: Vec::new(), has_more: false }));
                webhooks.expect_list_deliveries().returning(|_, _, _| Ok(Page { items: Vec::new(), has_more: false }));
                ports.webhooks = Arc::new(webhooks);
            },
        );
        let uri = "/dashboard/webhooks?merchant=mer_1&mode=live";
        let (status, body, _) = call(state, test::TestRequest::get().uri(uri), true).await;
        assert_eq!(status, StatusCode::OK, "{role:?}");
        assert_eq!(body.contains("action=\"/dashboard/webhooks/endpoints?"), manages, "{role:?}");
    }
}

/// A new key after a sign-in older than five minutes: the use case refuses it (nothing is
/// stored), the page asks for the password beside the form, and the form's key is given back,
/// so the same form sent again with the password can go through.
#[actix_web::test]
async fn a_key_is_refused_to_an_old_sign_in_and_the_form_may_be_sent_again() {
    use stablepay_domain::idempotency::model::{IdempotencyBegin, IdempotencyClaim};
    use stablepay_domain::page::Page;
    use stablepay_domain::ports::{MockApiKeyStore, MockEventStore, MockIdempotencyStore};
    let mut current = member(&mer(), Role::Owner);
    current.session.reauthenticated_at = at() - chrono::Duration::minutes(6);
    let state = state_of(
        current,
        None,
        |_| {},
        |ports| {
            let mut keys = MockApiKeyStore::new();
            keys.expect_insert_key().never();
            keys.expect_list_keys().returning(|_| Ok(Vec::new()));
            ports.keys = Arc::new(keys);
            let mut events = MockEventStore::new();
            events.expect_list_events().returning(|_, _, _| Ok(Page { items: Vec::new(), has_more: false }));
            ports.events = Arc::new(events);
            let mut idempotency = MockIdempotencyStore::new();
            idempotency.expect_begin().times(1).returning(|request, _| {
                let (namespace, key) = (request.namespace.clone(), request.key.clone());
                let claim = IdempotencyClaim { namespace, key, claimed_at: at() };
                Ok(IdempotencyBegin::Started(claim))
            });
            idempotency.expect_abandon().times(1).returning(|_| Ok(()));
            idempotency.expect_complete().never();
            ports.idempotency = Arc::new(idempotency);
        },
    );
    let form = [("csrfToken", "csrf"), ("formKey", "form-1"), ("type", "secret"), ("password", "")];
    let req = test::TestRequest::post().uri("/dashboard/developers/keys?merchant=mer_1&mode=test").set_form(form);
    let (status, body, _) = call(state, req, true).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("name=\"password\""), "{body}");
}

/// A link's page offers what the link's machine and the member's role allow: an active link
/// pause and archive, a paused one resume (never pause), an archived one only a copy, and a
/// viewer nothing.
#[actix_web::test]
async fn a_links_page_offers_what_its_state_and_the_role_allow() {
    use stablepay_domain::page::Page;
    use stablepay_domain::payment_link::model::Lifecycle;
    use stablepay_domain::ports::MockPaymentLinkStore;
    let forms = |body: &str| -> Vec<String> {
        let prefix = "action=\"/dashboard/payment-links/plink_1/";
        body.match_indices(prefix)
            .map(|(i, _)| body[i + prefix.len()..].split(['?', '"']).next().unwrap_or_default().to_owned())
            .collect()
    };
    for (role, lifecycle, offered) in [
        (Role::Owner, Lifecycle::Active, vec!["pause", "archive", "duplicate", "edit"]),
        (Role::Owner, Lifecycle::Paused, vec!["resume", "archive", "duplicate", "edit"]),
        (Role::Owner, Lifecycle::Archived, vec!["duplicate"]),
        (Role::Viewer, Lifecycle::Active, vec![]),
    ] {
        let state = state_of(
            member(&mer(), role),
            None,
            |_| {},
            |ports| {
                let mut links = MockPaymentLinkStore::new();
                let link = stablepay_domain::testing::payment_link(lifecycle, at());
                links.expect_get_link().returning(move |_, _| Ok(link.clone()));
                links.expect_list_link_invoices().returning(|_, _, _| Ok(Page { items: Vec::new(), has_more: false }));
                ports.links = Arc::new(links);
            },
        );
        let uri = "/dashboard/payment-links/plink_1?merchant=mer_1&mode=test";
        let (status, body, _) = call(state, test::TestRequest::get().uri(uri), true).await;
        assert_eq!(status, StatusCode::OK, "{role:?} {lifecycle:?}");
        assert_eq!(forms(&body), offered, "{role:?} {lifecycle:?}");
    }
}
