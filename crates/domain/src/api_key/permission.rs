//! Restricted keys: a secret key may be limited to some resource families, each read or write
//! (write includes read). An unrestricted secret key may do everything, as before.

use std::collections::BTreeMap;
use std::fmt;

use crate::error::Error;

/// What a restricted key's permission is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceFamily {
    /// Checkout sessions (and the simulated payments of test mode).
    CheckoutSessions,
    /// Invoices (and the test clock).
    Invoices,
    /// Payments and unattributed transfers.
    Payments,
    /// Payment links.
    PaymentLinks,
    /// Webhook endpoints, deliveries, incidents and test events.
    Webhooks,
    /// Events.
    Events,
    /// Exports, the reconciliation summary and reconciliation runs.
    Exports,
}

impl ResourceFamily {
    /// Every family.
    pub const ALL: [Self; 7] = [
        Self::CheckoutSessions,
        Self::Invoices,
        Self::Payments,
        Self::PaymentLinks,
        Self::Webhooks,
        Self::Events,
        Self::Exports,
    ];

    /// The family's name in a permission (`checkout_sessions`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CheckoutSessions => "checkout_sessions",
            Self::Invoices => "invoices",
            Self::Payments => "payments",
            Self::PaymentLinks => "payment_links",
            Self::Webhooks => "webhooks",
            Self::Events => "events",
            Self::Exports => "exports",
        }
    }

    /// Reads a family's name.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == value)
    }
}

/// How much of a family a key may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Access {
    /// Reads only.
    Read,
    /// Reads and changes.
    Write,
}

impl Access {
    /// `read` or `write`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
        }
    }

    /// Reads `read` or `write`.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "read" => Some(Self::Read),
            "write" => Some(Self::Write),
            _ => None,
        }
    }
}

/// A restricted key's permissions: the access it has to each family it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Permissions(BTreeMap<ResourceFamily, Access>);

impl Permissions {
    /// Reads `invoices:read,checkout_sessions:write` (a family named twice keeps the stronger
    /// access). Errors: `Validation` (`permissions`) for an empty list or an unknown family or
    /// access.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let mut map = BTreeMap::new();
        for item in text.split(',').map(str::trim) {
            let parsed = item.split_once(':').and_then(|(f, a)| Some((ResourceFamily::parse(f)?, Access::parse(a)?)));
            let Some((family, access)) = parsed else {
                let families = ResourceFamily::ALL.map(ResourceFamily::as_str).join(", ");
                return Err(Error::validation(
                    "permissions",
                    format!("{item:?} is not FAMILY:read or FAMILY:write (families: {families})"),
                ));
            };
            let held = map.entry(family).or_insert(access);
            *held = (*held).max(access);
        }
        Ok(Self(map))
    }

    /// Whether the permissions give `access` to `family` (write includes read).
    pub fn allows(&self, family: ResourceFamily, access: Access) -> bool {
        self.0.get(&family).is_some_and(|held| *held >= access)
    }
}

impl fmt::Display for Permissions {
    /// The canonical form: families in their order, comma separated.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items: Vec<String> =
            self.0.iter().map(|(family, access)| format!("{}:{}", family.as_str(), access.as_str())).collect();
        f.write_str(&items.join(","))
    }
}

/// What a request needs of its key: `None` for a route only an unrestricted key may use.
pub fn require(permissions: Option<&Permissions>, needed: Option<(ResourceFamily, Access)>) -> Result<(), Error> {
    let Some(permissions) = permissions else { return Ok(()) };
    match needed {
        Some((family, access)) if permissions.allows(family, access) => Ok(()),
        Some((family, access)) => {
            Err(Error::PermissionDenied { permission: format!("{}:{}", family.as_str(), access.as_str()) })
        }
        None => Err(Error::PermissionDenied { permission: "unrestricted".into() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_read_back_and_write_includes_read() {
        let p = Permissions::parse("invoices:read, checkout_sessions:write,invoices:write").unwrap();
        assert_eq!(p.to_string(), "checkout_sessions:write,invoices:write");
        assert_eq!(Permissions::parse(&p.to_string()).unwrap(), p);
        assert!(p.allows(ResourceFamily::Invoices, Access::Read));
        assert!(p.allows(ResourceFamily::CheckoutSessions, Access::Write));
        assert!(!p.allows(ResourceFamily::Events, Access::Read));
        let read = Permissions::parse("events:read").unwrap();
        assert!(!read.allows(ResourceFamily::Events, Access::Write));
        for bad in ["", "invoices", "invoices:admin", "customers:read", "invoices:read,"] {
            assert!(
                matches!(Permissions::parse(bad), Err(Error::Validation { ref field, .. }) if field == "permissions"),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_refusal_names_the_permission_missing() {
        let p = Permissions::parse("invoices:read").unwrap();
        assert_eq!(require(None, None), Ok(()));
        assert_eq!(require(Some(&p), Some((ResourceFamily::Invoices, Access::Read))), Ok(()));
        let denied = require(Some(&p), Some((ResourceFamily::Invoices, Access::Write)));
        assert_eq!(denied, Err(Error::PermissionDenied { permission: "invoices:write".into() }));
        let denied = require(Some(&p), None);
        assert_eq!(denied, Err(Error::PermissionDenied { permission: "unrestricted".into() }));
    }
}
