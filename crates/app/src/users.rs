//! The operator's user commands: `stablepay user create` makes the first owner of a merchant
//! (or any member), the password read from standard input so that it never sits in the
//! shell's history or the process list; with `--invite`, no password is read: the person
//! gets an emailed invitation (7 days) and sets their own.

use std::io::BufRead;
use std::process::ExitCode;

use clap::{Subcommand, ValueEnum};
use serde_json::{Value, json};
use stablepay_domain::Error;
use stablepay_domain::account::Role;

use crate::operator::{finish, merchant_id};
use crate::wiring::Adapters;

#[derive(Subcommand)]
pub enum UserCommand {
    /// Create a user who is ROLE of MERCHANT (its email verified). The password is the first
    /// line of standard input (15 to 128 characters); with --invite, an emailed link lets the
    /// person set it (or join with the account their email has).
    Create {
        #[arg(long)]
        email: String,
        /// Email an invitation instead of reading a password (sent by the worker).
        #[arg(long)]
        invite: bool,
        /// The name shown to the other members (the email's local part when omitted).
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        merchant: String,
        #[arg(long, value_enum)]
        role: RoleArg,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum RoleArg {
    Owner,
    Admin,
    Developer,
    Support,
    Viewer,
}

impl RoleArg {
    fn role(self) -> Role {
        match self {
            Self::Owner => Role::Owner,
            Self::Admin => Role::Admin,
            Self::Developer => Role::Developer,
            Self::Support => Role::Support,
            Self::Viewer => Role::Viewer,
        }
    }
}

/// The first line of standard input, without its line ending.
fn password_from_stdin() -> Result<String, Error> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|_| Error::validation("password", "could not be read from standard input"))?;
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}

async fn create(
    adapters: &Adapters,
    (email, name): (&str, Option<&str>),
    merchant: &str,
    role: Role,
) -> Result<(Value, String), Error> {
    let merchant = merchant_id(merchant)?;
    let password = password_from_stdin()?;
    let name = name.map(str::to_owned).unwrap_or_else(|| email.split('@').next().unwrap_or(email).to_owned());
    let user = adapters.use_cases().accounts().create_user((email, &name, &password), &merchant, role).await?;
    let text = format!("created {} ({}), {} of {merchant}", user.id, user.email, role.as_str());
    Ok((
        json!({ "id": user.id.as_str(), "email": user.email, "merchant": merchant.as_str(), "role": role.as_str() }),
        text,
    ))
}

async fn invite(adapters: &Adapters, email: &str, merchant: &str, role: Role) -> Result<(Value, String), Error> {
    let merchant = merchant_id(merchant)?;
    let link = adapters.use_cases().accounts().invite_by_operator(&merchant, email, role).await?;
    let text = format!(
        "invited {} as {} of {merchant}: the invitation ({}) is emailed by the worker and works until {}",
        link.email,
        role.as_str(),
        link.id,
        link.expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    let value = json!({
        "invitation": link.id.as_str(),
        "email": link.email,
        "merchant": merchant.as_str(),
        "role": role.as_str(),
        "expiresAt": link.expires_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    });
    Ok((value, text))
}

pub async fn user(command: UserCommand, adapters: &Adapters) -> ExitCode {
    match command {
        UserCommand::Create { email, invite: true, merchant, role, json, .. } => {
            finish(json, invite(adapters, &email, &merchant, role.role()).await)
        }
        UserCommand::Create { email, name, merchant, role, json, invite: false } => {
            finish(json, create(adapters, (&email, name.as_deref()), &merchant, role.role()).await)
        }
    }
}
