//! `stablepay dev`: the newcomer's sandbox in one command.
//!
//! Migrates, creates a demo merchant with test-mode keys and a dashboard owner the first time
//! (remembered in `.stablepay/dev.json`, readable by you only, which holds test keys and the
//! sandbox owner's password only), prints them with the base URL and the dashboard's, and
//! serves.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use stablepay_domain::Mode;
use stablepay_domain::api_key::KeyType;
use stablepay_domain::ids::MerchantId;

use crate::config::Config;
use crate::wiring::Adapters;
use crate::wiring::anyhow_lite::{Result, msg};

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DevState {
    merchant_id: String,
    secret_key: String,
    publishable_key: String,
    /// The dashboard owner (files of older versions have none: one is made then).
    #[serde(default)]
    owner_email: String,
    #[serde(default)]
    owner_password: String,
}

/// The sandbox owner's email.
const OWNER_EMAIL: &str = "owner@dev.stablepay.test";

/// A random password of 24 characters for the sandbox owner.
fn dev_password(crypto: &dyn stablepay_domain::crypto::Crypto) -> String {
    stablepay_domain::ids::PublicToken::generate(crypto).as_str().chars().take(24).collect()
}

/// The sandbox's dashboard owner, made once.
async fn ensure_owner(adapters: &Adapters, state: &mut DevState) -> Result<bool> {
    if !state.owner_email.is_empty() {
        return Ok(false);
    }
    let merchant = MerchantId::parse(&state.merchant_id).ok_or_else(|| msg("the sandbox's merchant id"))?;
    let password = dev_password(adapters.crypto.as_ref());
    let accounts = adapters.use_cases();
    accounts
        .accounts()
        .create_user((OWNER_EMAIL, "Sandbox owner", &password), &merchant, stablepay_domain::account::Role::Owner)
        .await
        .map_err(|e| msg(format!("creating the sandbox's dashboard owner: {e}")))?;
    state.owner_email = OWNER_EMAIL.to_owned();
    state.owner_password = password;
    Ok(true)
}

/// Writes a file only its owner can read (0600): it holds keys.
fn write_private(path: &std::path::Path, text: &str) -> Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        // A file made before by an older version keeps its mode unless set again.
        if path.exists() {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| msg(format!("{}: {e}", path.display())))?;
        }
    }
    let mut file = options.open(path).map_err(|e| msg(format!("{}: {e}", path.display())))?;
    file.write_all(text.as_bytes()).map_err(|e| msg(format!("{}: {e}", path.display())))
}

fn state_path() -> PathBuf {
    PathBuf::from(".stablepay").join("dev.json")
}

/// The sandbox's settings: a key sealing webhook signing secrets (made once, kept in
/// `.stablepay/secret.key`) unless `STABLEPAY_SECRET_KEY` is set, and webhooks to local
/// receivers allowed unless `STABLEPAY_WEBHOOK_ALLOW_PRIVATE` says otherwise.
pub fn prepare(config: &mut Config) -> Result<()> {
    if config.webhooks.secret_key.is_none() {
        let path = PathBuf::from(".stablepay").join("secret.key");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(_) => {
                let mut key = [0u8; 32];
                stablepay_domain::crypto::Crypto::fill_random(&crate::crypto::RingCrypto::new(), &mut key);
                let text = stablepay_webhooks::AesSecretBox::encode_key(&key);
                std::fs::create_dir_all(".stablepay").map_err(|e| msg(format!(".stablepay: {e}")))?;
                write_private(&path, &text)?;
                text
            }
        };
        let key =
            stablepay_webhooks::AesSecretBox::parse_key(&text).map_err(|e| msg(format!("{}: {e}", path.display())))?;
        config.webhooks.secret_key = Some(key);
    }
    if std::env::var_os("STABLEPAY_WEBHOOK_ALLOW_PRIVATE").is_none() {
        config.webhooks.allow_private = true;
    }
    Ok(())
}

pub async fn run(config: Config, adapters: Adapters) -> Result<()> {
    crate::server::migrate(&config).await?;
    let state = load_or_create(&adapters).await?;
    // Printed once the address is bound: with STABLEPAY_BIND's port 0 only then is it known.
    crate::server::serve_then(config, adapters, true, move |base| {
        use std::io::Write;
        let text = format!(
            "\n  stablepay dev sandbox (test mode)\n  merchant:        {}\n  secret key:      {}\n  publishable key: {}\n  base URL:        {base}/v1\n  dashboard:       {base}/dashboard (sign in as {} with the password {})\n  try: curl -H 'Authorization: Bearer {}' {base}/v1/events\n  keys are kept in {} (readable by you only)\n\n",
            state.merchant_id,
            state.secret_key,
            state.publishable_key,
            state.owner_email,
            state.owner_password,
            state.secret_key,
            state_path().display()
        );
        let _ = std::io::stdout().write_all(text.as_bytes());
        let _ = std::io::stdout().flush();
    })
    .await
}

async fn load_or_create(adapters: &Adapters) -> Result<DevState> {
    let path = state_path();
    if let Ok(text) = std::fs::read_to_string(&path)
        && let Ok(saved) = serde_json::from_str::<DevState>(&text)
        && let Some(id) = MerchantId::parse(&saved.merchant_id)
        && adapters.use_cases().operator().merchant(&id).await.is_ok()
    {
        // Made by an older version, the file may still be readable by others.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
        }
        let mut saved = saved;
        if ensure_owner(adapters, &mut saved).await? {
            let text = serde_json::to_string_pretty(&saved).map_err(|e| msg(e.to_string()))?;
            write_private(&path, &text)?;
        }
        return Ok(saved);
    }
    let use_cases = adapters.use_cases();
    let operator = use_cases.operator();
    let merchant = operator
        .create_merchant("Demo merchant", Some("http://localhost"), Default::default())
        .await
        .map_err(|e| msg(format!("creating the demo merchant: {e}")))?;
    let (_, secret) =
        operator.create_key(&merchant.id, (Mode::Test, KeyType::Secret), None).await.map_err(|e| msg(e.to_string()))?;
    let (_, publishable) = operator
        .create_key(&merchant.id, (Mode::Test, KeyType::Publishable), None)
        .await
        .map_err(|e| msg(e.to_string()))?;
    let mut state = DevState {
        merchant_id: merchant.id.to_string(),
        secret_key: secret.reveal().to_owned(),
        publishable_key: publishable.reveal().to_owned(),
        owner_email: String::new(),
        owner_password: String::new(),
    };
    ensure_owner(adapters, &mut state).await?;
    std::fs::create_dir_all(".stablepay").map_err(|e| msg(format!(".stablepay: {e}")))?;
    let text = serde_json::to_string_pretty(&state).map_err(|e| msg(e.to_string()))?;
    write_private(&path, &text)?;
    Ok(state)
}
