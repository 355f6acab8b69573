//! Operator commands: merchants and API keys. With `--json` the answer (or the error, as
//! `{"error":{"code","message"}}`) is one JSON object on stdout.

use std::process::ExitCode;

use clap::{Subcommand, ValueEnum};
use serde_json::{Value, json};
use stablepay_domain::api_key::{KeyType, Permissions};
use stablepay_domain::ids::{ApiKeyId, MerchantId};
use stablepay_domain::merchant::Token;
use stablepay_domain::merchant::model::Merchant;
use stablepay_domain::merchant::service::MerchantOptions;
use stablepay_domain::{Error, Mode, Resource};
use stablepay_http::error::ApiError;

use crate::wiring::Adapters;

#[derive(Subcommand)]
pub enum MerchantCommand {
    /// Create a merchant (active; test mode ready, live mode not activated).
    Create {
        #[arg(long)]
        name: String,
        /// Reviewed website (its origin is kept for live return URLs).
        #[arg(long)]
        website: Option<String>,
        /// Prefix of invoice numbers (1-20 of A-Z, 0-9, -); default INV.
        #[arg(long)]
        invoice_prefix: Option<String>,
        /// Platform fee absorbed by the merchant, in basis points (0-10000); default 0.
        #[arg(long)]
        fee_bps: Option<u32>,
        #[arg(long)]
        json: bool,
    },
    /// Activate live mode with a settlement wallet.
    Activate {
        merchant_id: String,
        /// The settlement wallet (without it: the one the merchant's owner chose in the
        /// dashboard, with its token, approving their activation request).
        #[arg(long, value_name = "0x...")]
        settlement_wallet: Option<String>,
        #[arg(long, value_enum)]
        token: Option<TokenArg>,
        #[arg(long)]
        json: bool,
    },
    /// Unique amounts for new live checkouts: each asks a few base units more (at most
    /// 0.000999) so that no two open checkouts of the wallet ask the same amount, and every
    /// transfer sent without its hash can be attributed. Needs live activation.
    UniqueAmounts {
        merchant_id: String,
        #[arg(value_enum)]
        state: OnOff,
        #[arg(long)]
        json: bool,
    },
    /// What the merchant's invoices, receipts, emails and hosted pages say about the seller.
    /// Each option given replaces its field (an empty value clears it); the others stay.
    Profile {
        merchant_id: String,
        /// The registered legal name, when it differs from the name.
        #[arg(long)]
        legal_name: Option<String>,
        /// The postal address (`\n` separates its lines).
        #[arg(long)]
        postal_address: Option<String>,
        /// The tax or VAT registration number.
        #[arg(long)]
        tax_id: Option<String>,
        /// Where customers ask for help.
        #[arg(long)]
        support_email: Option<String>,
        /// Where replies to the merchant's emails go.
        #[arg(long)]
        reply_to: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// The merchant's logo on its invoices, receipts, emails and hosted pages: a PNG file of at
    /// most 256 KiB, 16 to 1024 pixels wide and high (`--clear` removes it).
    Logo {
        merchant_id: String,
        /// The PNG file.
        #[arg(long, required_unless_present = "clear", conflicts_with = "clear")]
        file: Option<std::path::PathBuf>,
        /// Remove the logo.
        #[arg(long)]
        clear: bool,
        #[arg(long)]
        json: bool,
    },
    /// Monthly statements: on the 1st of each month (the merchant's clock; the test clock in
    /// test mode), an `invoices` and a `payments` export of the month before, mailed to EMAIL as
    /// download links once both files are ready. `--email` turns them on (or changes where
    /// they go), `--off` turns them off; with neither, shows the setting and the latest
    /// statements.
    Statements {
        merchant_id: String,
        /// The billing email the links go to.
        #[arg(long, conflicts_with = "off")]
        email: Option<String>,
        /// No more statements.
        #[arg(long)]
        off: bool,
        /// The mode whose records the statements hold.
        #[arg(long, value_enum, default_value = "live")]
        mode: ModeArg,
        #[arg(long)]
        json: bool,
    },
    /// Suspend a merchant: its keys stop working with ACCOUNT_SUSPENDED.
    Suspend {
        merchant_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Lift a suspension: the merchant's keys work again.
    Unsuspend {
        merchant_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Every merchant: id, name, status, live activation, created.
    List {
        #[arg(long)]
        json: bool,
    },
    /// One merchant in full (no secrets: keys are listed by `key list`).
    Show {
        merchant_id: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub enum KeyCommand {
    /// Create an API key; the key is printed once and never stored.
    Create {
        #[arg(long)]
        merchant: String,
        #[arg(long, value_enum)]
        mode: ModeArg,
        #[arg(long = "type", value_enum)]
        key_type: KeyTypeArg,
        /// Restrict a secret key to these permissions: FAMILY:read or FAMILY:write, comma
        /// separated (families: checkout_sessions, invoices, payments, payment_links, webhooks,
        /// events, exports; write includes read).
        #[arg(long)]
        permissions: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Revoke an API key.
    Revoke {
        key_id: String,
        #[arg(long)]
        json: bool,
    },
    /// A merchant's keys: id, prefix, mode, type, created, last used, revoked.
    List {
        #[arg(long)]
        merchant: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum TokenArg {
    #[value(name = "USDC")]
    Usdc,
    #[value(name = "USDT")]
    Usdt,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ModeArg {
    Test,
    Live,
}

impl ModeArg {
    pub fn mode(self) -> Mode {
        match self {
            ModeArg::Test => Mode::Test,
            ModeArg::Live => Mode::Live,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum KeyTypeArg {
    Secret,
    Publishable,
}

/// One line on stdout; a closed pipe (`stablepay merchant list | head -1`) ends it quietly.
fn out(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout(), "{text}");
}

pub(crate) fn finish(json_out: bool, result: Result<(Value, String), Error>) -> ExitCode {
    match result {
        Ok((value, text)) => {
            out(&if json_out { value.to_string() } else { text });
            ExitCode::SUCCESS
        }
        Err(err) => {
            let api = ApiError::from(err);
            if json_out {
                out(&json!({ "error": api.body() }).to_string());
            }
            eprintln!("stablepay: {}: {}", api.code.as_str(), api.message);
            ExitCode::FAILURE
        }
    }
}

fn time(at: Option<chrono::DateTime<chrono::Utc>>) -> Value {
    at.map_or(Value::Null, |t| Value::String(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)))
}

fn merchant_json(m: &stablepay_domain::merchant::Merchant) -> Value {
    json!({
        "id": m.id.as_str(),
        "name": m.name,
        "status": m.status.as_str(),
        "website": m.website_origin,
        "invoicePrefix": m.invoice_prefix,
        "feeBasisPoints": m.fee_basis_points,
        "live": m.live.as_ref().map(|l| json!({
            "settlementWallet": l.wallet.as_str(), "token": l.token.symbol(), "activatedAt": time(Some(l.activated_at)),
            "uniqueAmounts": l.unique_amounts
        })),
        "createdAt": time(Some(m.created_at)),
        "profile": profile_json(&m.profile),
        "logo": m.logo.as_ref().map(logo_json),
    })
}

fn logo_json(l: &stablepay_domain::merchant::Logo) -> Value {
    json!({ "digest": l.digest, "width": l.width, "height": l.height, "path": format!("/logos/{}.png", l.digest) })
}

/// `merchant logo`: sets the logo from a PNG file, or removes it.
async fn logo(adapters: &Adapters, id: &str, file: Option<&std::path::Path>) -> Result<(Value, String), Error> {
    use stablepay_domain::merchant::logo::MAX_LOGO_BYTES;
    let id = merchant_id(id)?;
    let png = match file {
        Some(path) => {
            let unreadable = |e: std::io::Error| Error::validation("file", format!("{}: {e}", path.display()));
            let size = std::fs::metadata(path).map_err(unreadable)?.len();
            if usize::try_from(size).map_or(true, |s| s > MAX_LOGO_BYTES) {
                return Err(Error::validation("logo", format!("a logo is at most {} KiB", MAX_LOGO_BYTES / 1024)));
            }
            Some(std::fs::read(path).map_err(unreadable)?)
        }
        None => None,
    };
    let set = adapters.use_cases().operator().set_logo(&id, png).await?;
    let text = match &set {
        Some(l) => format!("logo of {id} set: {} x {} px, /logos/{}.png", l.width, l.height, l.digest),
        None => format!("logo of {id} removed"),
    };
    Ok((json!({ "id": id.as_str(), "logo": set.as_ref().map(logo_json) }), text))
}

fn profile_json(p: &stablepay_domain::merchant::MerchantProfile) -> Value {
    json!({
        "legalName": p.legal_name, "postalAddress": p.postal_address, "taxId": p.tax_id,
        "supportEmail": p.support_email, "replyTo": p.reply_to,
    })
}

pub(crate) fn merchant_id(text: &str) -> Result<MerchantId, Error> {
    MerchantId::parse(text).ok_or(Error::NotFound(Resource::Merchant))
}

/// `merchant activate`: live mode with a settlement wallet (by default the one an owner asked
/// for).
async fn activate(
    adapters: &Adapters,
    id: &str,
    (settlement_wallet, token): (Option<&str>, Option<TokenArg>),
) -> Result<(Value, String), Error> {
    let token = token.map(|t| match t {
        TokenArg::Usdc => Token::Usdc,
        TokenArg::Usdt => Token::Usdt,
    });
    let id = merchant_id(id)?;
    let live = adapters.use_cases().operator().activate(&id, settlement_wallet, token).await?;
    let unique = if live.unique_amounts { ", unique amounts on" } else { "" };
    Ok((
        json!({
            "id": id.as_str(),
            "liveActivated": true,
            "settlementWallet": live.wallet.as_str(),
            "token": live.token.symbol(),
            "uniqueAmounts": live.unique_amounts,
        }),
        format!("activated {id}: live settlement to {} in {}{unique}", live.wallet, live.token.symbol()),
    ))
}

/// `merchant profile`: the given fields replace the stored ones (legal name, postal address
/// with `\n` between lines, tax id, support email, reply-to).
async fn profile(adapters: &Adapters, id: &str, given: [Option<String>; 5]) -> Result<(Value, String), Error> {
    let id = merchant_id(id)?;
    let change = |p: &mut stablepay_domain::merchant::MerchantProfile| {
        let fields = [&mut p.legal_name, &mut p.postal_address, &mut p.tax_id, &mut p.support_email, &mut p.reply_to];
        for (field, value) in fields.into_iter().zip(given) {
            if let Some(v) = value {
                *field = Some(v.replace("\\n", "\n"));
            }
        }
    };
    let saved = adapters.use_cases().operator().update_profile(&id, change).await?;
    Ok((json!({ "id": id.as_str(), "profile": profile_json(&saved) }), format!("profile of {id} saved")))
}

/// `merchant statements`: sets (`Some(Some(email))`), turns off (`Some(None)`) or only shows
/// (`None`) where `mode`'s monthly statements go, and lists the latest ones.
async fn statements(
    adapters: &Adapters,
    id: &str,
    mode: Mode,
    change: Option<Option<String>>,
) -> Result<(Value, String), Error> {
    let id = merchant_id(id)?;
    let use_cases = adapters.use_cases();
    use_cases.operator().merchant(&id).await?;
    let scope = stablepay_domain::Scope::new(id.clone(), mode);
    let statements = use_cases.statements();
    if let Some(email) = change {
        statements.set_email(&scope, email.as_deref()).await?;
    }
    let (setting, recent) = statements.show(&scope, 12).await?;
    let mut text = match &setting {
        Some(s) => format!("{mode} statements of {id} go to {} (since {})", s.email, s.enabled_at.to_rfc3339()),
        None => format!("no {mode} statements for {id}"),
    };
    for s in &recent {
        let failure = s.failure.as_deref().map_or(String::new(), |f| format!(": {f}"));
        text.push_str(&format!("\n{}  {}  {}{failure}", s.month, s.id, s.status.as_str()));
    }
    let recent: Vec<Value> = recent
        .iter()
        .map(|s| {
            json!({
                "id": s.id.as_str(), "month": s.month.to_string(), "status": s.status.as_str(),
                "failure": s.failure, "email": s.email, "createdAt": s.created_at.to_rfc3339(),
            })
        })
        .collect();
    let setting = setting.map(|s| json!({ "email": s.email, "enabledAt": s.enabled_at.to_rfc3339() }));
    Ok((json!({ "id": id.as_str(), "mode": mode.as_str(), "statements": setting, "recent": recent }), text))
}

/// `merchant unique-amounts`: on or off for new live checkouts.
async fn unique_amounts(adapters: &Adapters, id: &str, on: bool) -> Result<(Value, String), Error> {
    let id = merchant_id(id)?;
    adapters.use_cases().operator().set_unique_amounts(&id, on).await?;
    let word = if on { "on" } else { "off" };
    Ok((
        json!({ "id": id.as_str(), "uniqueAmounts": on }),
        format!("unique amounts {word} for {id}'s new live checkouts"),
    ))
}

/// `merchant list`: every merchant as JSON and as a table.
fn list_answer(all: &[Merchant]) -> (Value, String) {
    let mut text = format!("{:<26} {:<10} {:<6} {:<20} {}", "ID", "STATUS", "LIVE", "CREATED", "NAME");
    for m in all {
        text.push_str(&format!(
            "\n{:<26} {:<10} {:<6} {:<20} {}",
            m.id.as_str(),
            m.status.as_str(),
            if m.live.is_some() { "yes" } else { "no" },
            m.created_at.format("%Y-%m-%d %H:%M:%S"),
            m.name
        ));
    }
    (json!({ "merchants": all.iter().map(merchant_json).collect::<Vec<_>>() }), text)
}

/// `merchant show`: one merchant as JSON and as text.
fn show_answer(m: &Merchant) -> (Value, String) {
    let live = m.live.as_ref().map_or("not activated".to_owned(), |l| {
        let unique = if l.unique_amounts { ", unique amounts" } else { "" };
        format!("{} to {} (since {}){unique}", l.token.symbol(), l.wallet, l.activated_at.to_rfc3339())
    });
    let text = format!(
        "id:             {}\nname:           {}\nstatus:         {}\nwebsite:        {}\ninvoice prefix: {}\nfee:            {} bps\nlive:           {live}\ncreated:        {}",
        m.id,
        m.name,
        m.status.as_str(),
        m.website_origin.as_deref().unwrap_or("-"),
        m.invoice_prefix,
        m.fee_basis_points,
        m.created_at.to_rfc3339()
    );
    (merchant_json(m), text)
}

/// `merchant suspend` (`suspend`) or `merchant unsuspend`.
async fn suspension(adapters: &Adapters, id: &str, suspend: bool) -> Result<(Value, String), Error> {
    let id = merchant_id(id)?;
    adapters.use_cases().operator().suspend(&id, suspend).await?;
    if suspend {
        Ok((json!({ "id": id.as_str(), "status": "suspended" }), format!("suspended {id}")))
    } else {
        Ok((json!({ "id": id.as_str(), "status": "active" }), format!("unsuspended {id}: its keys work again")))
    }
}

pub async fn merchant(command: MerchantCommand, adapters: &Adapters) -> ExitCode {
    let use_cases = adapters.use_cases();
    let operator = use_cases.operator();
    match command {
        MerchantCommand::Create { name, website, invoice_prefix, fee_bps, json } => {
            let options = MerchantOptions { invoice_prefix, fee_basis_points: fee_bps };
            let r = operator
                .create_merchant(&name, website.as_deref(), options)
                .await
                .map(|m| (json!({ "id": m.id.as_str() }), format!("created merchant {}", m.id)));
            finish(json, r)
        }
        MerchantCommand::Activate { merchant_id: id, settlement_wallet, token, json } => {
            let r = activate(adapters, &id, (settlement_wallet.as_deref(), token)).await;
            if matches!(r, Err(Error::AccountSuspended)) {
                eprintln!("stablepay: merchant {id} is suspended; run `stablepay merchant unsuspend {id}` first");
            }
            finish(json, r)
        }
        MerchantCommand::Profile {
            merchant_id: id,
            legal_name,
            postal_address,
            tax_id,
            support_email,
            reply_to,
            json,
        } => {
            let given = [legal_name, postal_address, tax_id, support_email, reply_to];
            finish(json, profile(adapters, &id, given).await)
        }
        MerchantCommand::Logo { merchant_id: id, file, clear: _, json } => {
            finish(json, logo(adapters, &id, file.as_deref()).await)
        }
        MerchantCommand::UniqueAmounts { merchant_id: id, state, json } => {
            finish(json, unique_amounts(adapters, &id, matches!(state, OnOff::On)).await)
        }
        MerchantCommand::Statements { merchant_id: id, email, off, mode, json } => {
            let change = if off { Some(None) } else { email.map(Some) };
            finish(json, statements(adapters, &id, mode.mode(), change).await)
        }
        MerchantCommand::Suspend { merchant_id: id, json } => finish(json, suspension(adapters, &id, true).await),
        MerchantCommand::Unsuspend { merchant_id: id, json } => finish(json, suspension(adapters, &id, false).await),
        MerchantCommand::List { json } => {
            let r = operator.merchants().await.map(|all| list_answer(&all));
            finish(json, r)
        }
        MerchantCommand::Show { merchant_id: id, json } => {
            let r = async {
                let m = operator.merchant(&merchant_id(&id)?).await?;
                Ok(show_answer(&m))
            }
            .await;
            finish(json, r)
        }
    }
}

/// `key create`: a key of `mode` and type, restricted to `permissions` when given.
async fn create_key(
    adapters: &Adapters,
    merchant: &str,
    (mode, key_type): (Mode, KeyType),
    permissions: Option<&str>,
) -> Result<(Value, String), Error> {
    let id = merchant_id(merchant)?;
    let permissions = permissions.map(Permissions::parse).transpose()?;
    let (key, secret) = adapters.use_cases().operator().create_key(&id, (mode, key_type), permissions).await?;
    let restricted = key.permissions.as_ref().map(ToString::to_string);
    let value = json!({ "id": key.id.as_str(), "key": secret.reveal(), "mode": mode.as_str(),
        "type": key_type.as_str(), "permissions": restricted });
    Ok((value, format!("created key {} (shown once): {}", key.id, secret.reveal())))
}

/// `key list`: a merchant's keys as JSON and as a table.
async fn list_keys(adapters: &Adapters, merchant: &str) -> Result<(Value, String), Error> {
    let id = merchant_id(merchant)?;
    let keys = adapters.use_cases().operator().keys(&id).await?;
    let mut text = format!(
        "{:<26} {:<16} {:<5} {:<12} {:<20} {:<20} {}",
        "ID", "PREFIX", "MODE", "TYPE", "CREATED", "LAST USED", "REVOKED"
    );
    let day = |t: Option<chrono::DateTime<chrono::Utc>>| {
        t.map_or("-".to_owned(), |t| t.format("%Y-%m-%d %H:%M:%S").to_string())
    };
    for k in &keys {
        text.push_str(&format!(
            "\n{:<26} {:<16} {:<5} {:<12} {:<20} {:<20} {}",
            k.id.as_str(),
            k.display_prefix,
            k.mode.as_str(),
            k.key_type.as_str(),
            day(Some(k.created_at)),
            day(k.last_used_at),
            day(k.revoked_at)
        ));
    }
    let value = json!({ "keys": keys.iter().map(|k| json!({
        "id": k.id.as_str(), "prefix": k.display_prefix, "mode": k.mode.as_str(),
        "type": k.key_type.as_str(), "createdAt": time(Some(k.created_at)),
        "lastUsedAt": time(k.last_used_at), "revokedAt": time(k.revoked_at),
        "expiresAt": time(k.expires_at), "permissions": k.permissions.as_ref().map(ToString::to_string),
    })).collect::<Vec<_>>() });
    Ok((value, text))
}

pub async fn key(command: KeyCommand, adapters: &Adapters) -> ExitCode {
    match command {
        KeyCommand::Create { merchant, mode, key_type, permissions, json } => {
            let key_type = match key_type {
                KeyTypeArg::Secret => KeyType::Secret,
                KeyTypeArg::Publishable => KeyType::Publishable,
            };
            finish(json, create_key(adapters, &merchant, (mode.mode(), key_type), permissions.as_deref()).await)
        }
        KeyCommand::List { merchant, json } => finish(json, list_keys(adapters, &merchant).await),
        KeyCommand::Revoke { key_id, json } => {
            let r = async {
                let id = ApiKeyId::parse(&key_id).ok_or(Error::NotFound(Resource::ApiKey))?;
                adapters.use_cases().operator().revoke_key(&id).await?;
                Ok((json!({ "id": id.as_str(), "revoked": true }), format!("revoked {id}")))
            }
            .await;
            finish(json, r)
        }
    }
}
