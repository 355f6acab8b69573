//! The web pages of stablepay, a driving adapter over the domain's use cases beside the REST
//! API: the pages customers see, the checkout page (`checkoutUrl`), the hosted invoice page
//! (`hostedInvoiceUrl`), a payment link's page (its `url`), and the download links of a
//! merchant's monthly statement; and the dashboard's account pages (sign in and out, and the
//! pages its emailed links open). Server-rendered with maud (every
//! interpolated string is escaped at compile time); they work without JavaScript for reading,
//! scan and copy, and for reporting a transaction hash. `assets/pages.js` only adds the wallet
//! button, copy buttons, the countdown and the live status. Styles and script are served by the
//! service itself: no third-party request, and a Content-Security-Policy that allows nothing
//! else.

pub mod account;
pub mod assets;
pub mod checkout;
pub mod dashboard;
pub mod invoice;
pub mod link;
pub mod live;
pub mod page;
pub mod statement;

use actix_web::web::ServiceConfig;

/// Registers every page and asset route.
pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(checkout::checkout_page)
        .service(live::checkout_events)
        .service(checkout::simulate_from_page)
        .service(checkout::submit_from_page)
        .service(invoice::invoice_page)
        .service(invoice::pay_invoice)
        .service(link::link_page)
        .service(link::submit_link_page)
        .service(statement::statement_file)
        .service(account::login_page)
        .service(account::login)
        .service(account::logout)
        .service(account::home)
        .service(dashboard::overview::show)
        .service(dashboard::invoices::list)
        .service(dashboard::draft::new)
        .service(dashboard::draft::create)
        .service(dashboard::draft::edit)
        .service(dashboard::draft::update)
        .service(dashboard::invoices::pdf)
        .service(dashboard::invoices::show)
        .service(dashboard::invoices::act)
        .service(dashboard::checkouts::sessions)
        .service(dashboard::checkouts::session)
        .service(dashboard::checkouts::payments)
        .service(dashboard::checkouts::payment)
        .service(dashboard::developers::show)
        .service(dashboard::developers::create)
        .service(dashboard::developers::revoke)
        .service(dashboard::exports::show)
        .service(dashboard::exports::create)
        .service(dashboard::exports::cancel)
        .service(dashboard::exports::file)
        .service(dashboard::settings::show)
        .service(dashboard::settings::change_wallet)
        .service(dashboard::settings::activation)
        .service(dashboard::settings::alerts)
        .service(dashboard::settings::unique_amounts)
        .service(dashboard::settings::invite)
        .service(dashboard::settings::revoke_invitation)
        .service(dashboard::settings::member)
        .service(dashboard::security::show)
        .service(dashboard::security::start)
        .service(dashboard::security::confirm)
        .service(dashboard::security::disable)
        .service(dashboard::security::require)
        .service(dashboard::security::change_password)
        .service(dashboard::security::end_sessions)
        .service(dashboard::security::audit_log)
        .service(dashboard::links::list)
        .service(dashboard::links::new)
        .service(dashboard::links::create)
        .service(dashboard::links::show)
        .service(dashboard::links::act)
        .service(dashboard::webhooks::list)
        .service(dashboard::webhooks::create)
        .service(dashboard::webhooks::endpoint)
        .service(dashboard::webhooks::replay)
        .service(account::verify_page)
        .service(account::verify)
        .service(account::reset_page)
        .service(account::reset)
        .service(account::signup_page)
        .service(account::signup)
        .service(account::forgot_page)
        .service(account::forgot)
        .service(account::accept_page)
        .service(account::accept)
        .service(assets::styles)
        .service(assets::script)
        .service(assets::icon)
        .service(assets::logo);
}

/// The metrics label of a page path: its family, never a session id or token.
pub fn route_label(path: &str) -> Option<&'static str> {
    match path.split('/').nth(1) {
        Some("checkout") => Some("/checkout/*"),
        Some("i") => Some("/i/*"),
        Some("l") => Some("/l/*"),
        Some("s") => Some("/s/*"),
        Some("dashboard") => Some("/dashboard/*"),
        Some("assets") => Some("/assets/*"),
        Some("favicon.ico") => Some("/favicon.ico"),
        Some("logos") => Some("/logos/*"),
        _ => None,
    }
}
