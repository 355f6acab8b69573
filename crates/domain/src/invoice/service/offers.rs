//! What a member may do with one invoice: one answer, from their role (the capability table)
//! and the invoice's state (its machines), that the dashboard uses both for the buttons it
//! shows and for the form it accepts, so the two cannot drift apart.

use crate::account::capability::Action;
use crate::account::service::accounts::Current;
use crate::error::Error;
use crate::invoice::aggregate::InvoiceAggregate;
use crate::invoice::collection::CollectionState;
use crate::invoice::input::CloseAction;
use crate::mode::Scope;

/// Something a member can do with an invoice from its page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InvoiceAction {
    /// Edit the draft.
    Edit,
    /// Issue the draft.
    Issue,
    /// Issue the draft and email it to the customer.
    IssueAndSend,
    /// Email the invoice to the customer.
    Send,
    /// Email the customer a reminder.
    Remind,
    /// Open a checkout for what is due.
    OpenCheckout,
    /// Void the invoice.
    Void,
    /// Void what remains of a partly paid invoice.
    VoidRemaining,
    /// Mark the invoice uncollectible.
    MarkUncollectible,
    /// Record a refund reference for a credited payment.
    RecordRefund,
    /// Copy the invoice into a new draft.
    Duplicate,
}

impl InvoiceAction {
    /// Every action, in the order a page offers them.
    pub const ALL: [Self; 11] = [
        Self::Edit,
        Self::Issue,
        Self::IssueAndSend,
        Self::Send,
        Self::Remind,
        Self::OpenCheckout,
        Self::Void,
        Self::VoidRemaining,
        Self::MarkUncollectible,
        Self::RecordRefund,
        Self::Duplicate,
    ];

    /// The action's name in the dashboard's addresses (`void-remaining`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Edit => "edit",
            Self::Issue => "issue",
            Self::IssueAndSend => "issue-send",
            Self::Send => "send",
            Self::Remind => "remind",
            Self::OpenCheckout => "checkout",
            Self::Void => "void",
            Self::VoidRemaining => "void-remaining",
            Self::MarkUncollectible => "mark-uncollectible",
            Self::RecordRefund => "refund",
            Self::Duplicate => "duplicate",
        }
    }

    /// Reads an action's name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == name)
    }

    /// The capability the action needs (docs/dashboard.md prints the table).
    pub fn needs(self) -> Action {
        match self {
            Self::Send | Self::Remind => Action::SendInvoice,
            Self::OpenCheckout => Action::OpenCheckout,
            Self::RecordRefund => Action::AddRefundReference,
            Self::Edit
            | Self::Issue
            | Self::IssueAndSend
            | Self::Void
            | Self::VoidRemaining
            | Self::MarkUncollectible
            | Self::Duplicate => Action::ManageInvoices,
        }
    }

    /// Whether the invoice's state allows the action (whoever asks).
    pub fn allowed(self, agg: &InvoiceAggregate) -> bool {
        let inv = &agg.invoice;
        match self {
            Self::Edit | Self::Issue | Self::IssueAndSend => inv.collection_state == CollectionState::Draft,
            Self::Send => inv.check_sendable().is_ok(),
            Self::Remind => inv.check_remindable().is_ok(),
            Self::OpenCheckout => inv.check_collecting().is_ok(),
            Self::Void => CloseAction::Void.allowed(inv),
            Self::VoidRemaining => CloseAction::VoidRemaining.allowed(inv),
            Self::MarkUncollectible => CloseAction::MarkUncollectible.allowed(inv),
            Self::RecordRefund => agg.payments.iter().any(|p| !p.customer_amount_credited.is_zero()),
            Self::Duplicate => true,
        }
    }

    /// Whether `current` may take the action in `scope` by their role (and the merchant's
    /// two-factor and live-mode rules). Errors: `NotFound(Merchant)`, `AuthForbidden`.
    pub fn permitted(self, current: &Current, scope: &Scope) -> Result<(), Error> {
        current.require(&scope.merchant_id, scope.mode, self.needs()).map(|_| ())
    }
}

/// What `current` may do with `agg` in `scope`: the actions their role allows there that the
/// invoice's state allows now, in the order a page offers them.
pub fn offers(current: &Current, scope: &Scope, agg: &InvoiceAggregate) -> Vec<InvoiceAction> {
    InvoiceAction::ALL.into_iter().filter(|a| a.allowed(agg) && a.permitted(current, scope).is_ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::account::capability::Role;
    use crate::ids::MerchantId;
    use crate::mode::Mode;
    use crate::money::Decimal6;
    use crate::testing::member;

    fn merchant() -> MerchantId {
        MerchantId::from_trusted("mer_1".into())
    }

    fn open() -> InvoiceAggregate {
        crate::testing::open_invoice("10").unwrap()
    }

    fn offered(role: Role, mode: Mode, agg: &InvoiceAggregate) -> Vec<InvoiceAction> {
        offers(&member(&merchant(), role), &Scope::new(merchant(), mode), agg)
    }

    #[test]
    fn a_member_is_offered_what_their_role_allows_in_the_invoices_state() {
        use InvoiceAction::*;
        let agg = open();
        let managing = vec![Send, Remind, OpenCheckout, Void, MarkUncollectible, Duplicate];
        assert_eq!(offered(Role::Owner, Mode::Live, &agg), managing);
        assert_eq!(offered(Role::Admin, Mode::Test, &agg), managing);
        // A developer manages invoices in test mode only; support sends, reminds and opens
        // checkouts; viewers read.
        assert_eq!(offered(Role::Developer, Mode::Test, &agg), managing);
        assert_eq!(offered(Role::Developer, Mode::Live, &agg), Vec::<InvoiceAction>::new());
        assert_eq!(offered(Role::Support, Mode::Live, &agg), vec![Send, Remind, OpenCheckout]);
        assert_eq!(offered(Role::Viewer, Mode::Test, &agg), Vec::<InvoiceAction>::new());
        // Another merchant's member is offered nothing.
        let stranger = member(&MerchantId::from_trusted("mer_2".into()), Role::Owner);
        assert!(offers(&stranger, &Scope::new(merchant(), Mode::Test), &agg).is_empty());
    }

    #[test]
    fn void_the_remainder_is_offered_wherever_the_collection_machine_allows_it() {
        use crate::invoice::collection::CollectionState as C;
        let mut agg = open();
        agg.invoice.customer_amount_paid = Decimal6::parse("4").unwrap();
        for state in C::ALL {
            agg.invoice.collection_state = state;
            let shown = offered(Role::Owner, Mode::Test, &agg).contains(&InvoiceAction::VoidRemaining);
            assert_eq!(shown, CloseAction::VoidRemaining.allowed(&agg.invoice), "{state:?}");
        }
        agg.invoice.collection_state = C::PastDue;
        assert!(
            offered(Role::Owner, Mode::Test, &agg).contains(&InvoiceAction::VoidRemaining),
            "past due, paid in part"
        );
        agg.invoice.collection_state = C::PartiallyPaid;
        assert!(offered(Role::Owner, Mode::Test, &agg).contains(&InvoiceAction::VoidRemaining));
        agg.invoice.collection_state = C::Draft;
        let draft = offered(Role::Owner, Mode::Test, &agg);
        assert!(
            draft.starts_with(&[InvoiceAction::Edit, InvoiceAction::Issue, InvoiceAction::IssueAndSend]),
            "{draft:?}"
        );
        assert!(offered(Role::Support, Mode::Test, &agg).iter().all(|a| a.needs() != Action::ManageInvoices));
    }

    #[test]
    fn every_action_has_one_name() {
        for a in InvoiceAction::ALL {
            assert_eq!(InvoiceAction::parse(a.as_str()), Some(a));
        }
        assert_eq!(InvoiceAction::parse("delete"), None);
    }
}
