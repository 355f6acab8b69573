//! Roles and what each may do: one table decides every dashboard action for every role (and
//! `docs/dashboard.md` prints it).

use crate::error::Error;
use crate::mode::Mode;

/// A member's role in a merchant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Everything: members and owners, live activation, the settlement wallet, security.
    Owner,
    /// Everything but ownership: not owners, live activation, the wallet or security.
    Admin,
    /// API keys, webhooks, everything in test mode, and reading everything.
    Developer,
    /// Reading everything, sending and reminding invoices, opening checkouts, refund references.
    Support,
    /// Reading only, and exports.
    Viewer,
}

impl Role {
    /// Every role, most powerful first.
    pub const ALL: [Self; 5] = [Self::Owner, Self::Admin, Self::Developer, Self::Support, Self::Viewer];

    /// The role as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Owner => "owner",
            Self::Admin => "admin",
            Self::Developer => "developer",
            Self::Support => "support",
            Self::Viewer => "viewer",
        }
    }

    /// Reads a role as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == value)
    }
}

/// Something a member may do in a merchant's dashboard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Read invoices, checkouts, payments, links, webhooks, events, settings and diagnostics.
    Read,
    /// Create exports and download them.
    Export,
    /// Send an invoice, or remind its customer.
    SendInvoice,
    /// Open a checkout for what an invoice has due.
    OpenCheckout,
    /// Record a refund reference on an invoice.
    AddRefundReference,
    /// Create, edit, issue, void and close invoices.
    ManageInvoices,
    /// Create, edit, pause, resume and archive payment links.
    ManagePaymentLinks,
    /// Create and revoke API keys.
    ManageApiKeys,
    /// Register, change and replay webhook endpoints and deliveries.
    ManageWebhooks,
    /// Invite members, change their roles and remove them (owners excepted).
    ManageMembers,
    /// Make, change or remove owners.
    ManageOwners,
    /// Ask for (or, when allowed, perform) live activation.
    ActivateLive,
    /// Change the settlement wallet.
    ChangeSettlementWallet,
    /// The merchant's security settings (two-factor login required for all members).
    ManageSecurity,
    /// Read the audit log.
    ReadAuditLog,
    /// Decide which checkout a held or unattributed transfer pays (attribution by a person).
    AttributeTransfers,
    /// Turn unique amounts on or off for new live checkouts.
    ManageUniqueAmounts,
}

impl Action {
    /// Every action.
    pub const ALL: [Self; 17] = [
        Self::Read,
        Self::Export,
        Self::SendInvoice,
        Self::OpenCheckout,
        Self::AddRefundReference,
        Self::ManageInvoices,
        Self::ManagePaymentLinks,
        Self::ManageApiKeys,
        Self::ManageWebhooks,
        Self::ManageMembers,
        Self::ManageOwners,
        Self::ActivateLive,
        Self::ChangeSettlementWallet,
        Self::ManageSecurity,
        Self::ReadAuditLog,
        Self::AttributeTransfers,
        Self::ManageUniqueAmounts,
    ];

    /// The action's name (`manage_api_keys`), as `docs/dashboard.md` and refusals name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Export => "export",
            Self::SendInvoice => "send_invoice",
            Self::OpenCheckout => "open_checkout",
            Self::AddRefundReference => "add_refund_reference",
            Self::ManageInvoices => "manage_invoices",
            Self::ManagePaymentLinks => "manage_payment_links",
            Self::ManageApiKeys => "manage_api_keys",
            Self::ManageWebhooks => "manage_webhooks",
            Self::ManageMembers => "manage_members",
            Self::ManageOwners => "manage_owners",
            Self::ActivateLive => "activate_live",
            Self::ChangeSettlementWallet => "change_settlement_wallet",
            Self::ManageSecurity => "manage_security",
            Self::ReadAuditLog => "read_audit_log",
            Self::AttributeTransfers => "attribute_transfers",
            Self::ManageUniqueAmounts => "manage_unique_amounts",
        }
    }
}

/// Who may do an action: in both modes, or in test mode only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// Not allowed.
    No,
    /// Allowed in test mode only.
    TestOnly,
    /// Allowed in both modes.
    Yes,
}

/// The table: for each action, the grant of each role in the order of [`Role::ALL`] (owner,
/// admin, developer, support, viewer).
pub const CAPABILITIES: [(Action, [Grant; 5]); 17] = {
    use Grant::{No, TestOnly as T, Yes};
    [
        (Action::Read, [Yes, Yes, Yes, Yes, Yes]),
        (Action::Export, [Yes, Yes, Yes, Yes, Yes]),
        (Action::SendInvoice, [Yes, Yes, T, Yes, No]),
        (Action::OpenCheckout, [Yes, Yes, T, Yes, No]),
        (Action::AddRefundReference, [Yes, Yes, T, Yes, No]),
        (Action::ManageInvoices, [Yes, Yes, T, No, No]),
        (Action::ManagePaymentLinks, [Yes, Yes, T, No, No]),
        (Action::ManageApiKeys, [Yes, Yes, Yes, No, No]),
        (Action::ManageWebhooks, [Yes, Yes, Yes, No, No]),
        (Action::ManageMembers, [Yes, Yes, No, No, No]),
        (Action::ManageOwners, [Yes, No, No, No, No]),
        (Action::ActivateLive, [Yes, No, No, No, No]),
        (Action::ChangeSettlementWallet, [Yes, No, No, No, No]),
        (Action::ManageSecurity, [Yes, No, No, No, No]),
        (Action::ReadAuditLog, [Yes, Yes, No, No, No]),
        (Action::AttributeTransfers, [Yes, Yes, No, No, No]),
        (Action::ManageUniqueAmounts, [Yes, Yes, No, No, No]),
    ]
};

/// The grant of `role` for `action`.
pub fn grant(role: Role, action: Action) -> Grant {
    let column = Role::ALL.iter().position(|r| *r == role).unwrap_or(Role::ALL.len() - 1);
    CAPABILITIES.iter().find(|(a, _)| *a == action).map_or(Grant::No, |(_, grants)| grants[column])
}

/// Whether `role` may do `action` in `mode`.
pub fn allows(role: Role, action: Action, mode: Mode) -> bool {
    match grant(role, action) {
        Grant::Yes => true,
        Grant::TestOnly => mode == Mode::Test,
        Grant::No => false,
    }
}

/// Refuses what `role` may not do in `mode`. Errors: `AuthForbidden` naming the action.
pub fn require(role: Role, action: Action, mode: Mode) -> Result<(), Error> {
    if allows(role, action, mode) {
        return Ok(());
    }
    Err(Error::AuthForbidden(format!("a {} may not {} in {mode} mode", role.as_str(), action.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_every_action_once() {
        let listed: Vec<Action> = CAPABILITIES.iter().map(|(a, _)| *a).collect();
        assert_eq!(listed, Action::ALL.to_vec());
    }

    #[test]
    fn each_role_is_allowed_exactly_what_its_description_says() {
        use Mode::{Live, Test};
        // Everyone reads and exports.
        for role in Role::ALL {
            assert!(allows(role, Action::Read, Live) && allows(role, Action::Export, Live), "{role:?}");
        }
        // Only owners touch ownership, live activation, the wallet and security.
        for action in
            [Action::ManageOwners, Action::ActivateLive, Action::ChangeSettlementWallet, Action::ManageSecurity]
        {
            let allowed: Vec<Role> = Role::ALL.into_iter().filter(|r| allows(*r, action, Test)).collect();
            assert_eq!(allowed, [Role::Owner], "{action:?}");
        }
        // Admins do everything else.
        for action in Action::ALL {
            let owner_only = matches!(
                action,
                Action::ManageOwners | Action::ActivateLive | Action::ChangeSettlementWallet | Action::ManageSecurity
            );
            assert_eq!(allows(Role::Admin, action, Live), !owner_only, "{action:?}");
        }
        // Developers: keys and webhooks in both modes, the merchant's records in test mode only.
        assert!(allows(Role::Developer, Action::ManageApiKeys, Live));
        assert!(allows(Role::Developer, Action::ManageWebhooks, Live));
        assert!(allows(Role::Developer, Action::ManageInvoices, Test));
        assert!(!allows(Role::Developer, Action::ManageInvoices, Live));
        assert!(!allows(Role::Developer, Action::ManageMembers, Test));
        // Support: invoices' follow-up in both modes, nothing of the configuration.
        for action in [Action::SendInvoice, Action::OpenCheckout, Action::AddRefundReference] {
            assert!(allows(Role::Support, action, Live), "{action:?}");
        }
        for action in [Action::ManageInvoices, Action::ManageApiKeys, Action::ManageWebhooks, Action::ReadAuditLog] {
            assert!(!allows(Role::Support, action, Test), "{action:?}");
        }
        // Viewers: read and export, nothing else, in either mode.
        let viewer: Vec<Action> = Action::ALL.into_iter().filter(|a| allows(Role::Viewer, *a, Test)).collect();
        assert_eq!(viewer, [Action::Read, Action::Export]);
    }

    #[test]
    fn a_refusal_names_the_role_the_action_and_the_mode() {
        assert_eq!(require(Role::Developer, Action::ManageInvoices, Mode::Test), Ok(()));
        let refused = require(Role::Developer, Action::ManageInvoices, Mode::Live);
        assert_eq!(refused, Err(Error::AuthForbidden("a developer may not manage_invoices in live mode".into())));
    }

    #[test]
    fn roles_read_back() {
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("Owner"), None);
    }
}
