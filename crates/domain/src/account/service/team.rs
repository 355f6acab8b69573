//! The team of a merchant: its members, their roles (the last owner stays), the two-factor
//! requirement, and the audit log.

use crate::account::audit::{AuditAction, AuditEntry, MAX_AUDIT_PAGE};
use crate::account::capability::Action;
use crate::account::members::MembershipChange;
use crate::account::members::action_for;
use crate::account::model::{Membership, User};
use crate::account::service::accounts::{Accounts, Current};
use crate::error::{Error, Resource};
use crate::ids::{AuditEntryId, MerchantId, UserId};
use crate::mode::Mode;
use crate::page::{Page, PageRequest};

impl Accounts<'_> {
    /// The merchant's members. Errors: `NotFound(Merchant)` for a merchant the user is not a
    /// member of; `AuthForbidden` (`read`).
    pub async fn members(&self, current: &Current, merchant: &MerchantId) -> Result<Vec<(Membership, User)>, Error> {
        current.require(merchant, Mode::Test, Action::Read)?;
        self.store.members(merchant).await
    }

    /// Changes a member's role, or removes them (a member may always leave, the last owner
    /// excepted). Touching an owner, or making one, needs `manage_owners`; other changes
    /// `manage_members`. Errors: `NotFound(Member)`; `AuthForbidden` (the role, or the
    /// last-owner rule).
    pub async fn change_member(
        &self,
        current: &Current,
        merchant: &MerchantId,
        user: &UserId,
        change: MembershipChange,
    ) -> Result<Membership, Error> {
        current.membership(merchant)?;
        let members = self.store.members(merchant).await?;
        let (target, target_user) =
            members.iter().find(|(m, _)| &m.user_id == user).ok_or(Error::NotFound(Resource::Member))?;
        let leaving = &current.user.id == user && change == MembershipChange::Remove;
        if !leaving {
            current.require(merchant, Mode::Test, Action::ManageMembers)?;
            current.require(merchant, Mode::Test, action_for(target.role, change))?;
        }
        let (action, detail) = match change {
            MembershipChange::SetRole(role) => {
                (AuditAction::RoleChanged, format!("{} to {}", target.role.as_str(), role.as_str()))
            }
            MembershipChange::Remove if leaving => (AuditAction::MemberRemoved, "left".to_owned()),
            MembershipChange::Remove => (AuditAction::MemberRemoved, format!("was {}", target.role.as_str())),
        };
        let now = self.clock.system_now();
        let entry =
            AuditEntry::new(self.crypto, merchant, current.actor(), (action, Some(&target_user.email), detail), now);
        self.store.change_membership(merchant, user, change, &[entry]).await
    }

    /// Requires (or not) two-factor login of every member; to require it, the owner must have
    /// it on (or they would be locked out). Errors: `AuthForbidden` (`manage_security`);
    /// `Validation` (`require_two_factor`).
    pub async fn set_require_two_factor(
        &self,
        current: &Current,
        merchant: &MerchantId,
        on: bool,
    ) -> Result<(), Error> {
        current.require(merchant, Mode::Test, Action::ManageSecurity)?;
        if on && current.user.two_factor_since.is_none() {
            return Err(Error::validation(
                "require_two_factor",
                "turn on two-factor login for yourself before requiring it of everyone",
            ));
        }
        let detail = format!("two-factor login {}", if on { "required" } else { "optional" });
        let now = self.clock.system_now();
        let entry =
            AuditEntry::new(self.crypto, merchant, current.actor(), (AuditAction::SecurityChanged, None, detail), now);
        self.store.set_require_two_factor(merchant, on, &[entry]).await
    }

    /// A page of the merchant's audit log, newest first. Errors: `AuthForbidden`
    /// (`read_audit_log`); `InvalidCursor` for a cursor that is no entry of this log.
    pub async fn audit_log(
        &self,
        current: &Current,
        merchant: &MerchantId,
        page: &PageRequest,
    ) -> Result<Page<AuditEntry>, Error> {
        current.require(merchant, Mode::Test, Action::ReadAuditLog)?;
        let before =
            page.starting_after.as_deref().map(|c| AuditEntryId::parse(c).ok_or(Error::InvalidCursor)).transpose()?;
        let limit = page.limit.clamp(1, MAX_AUDIT_PAGE);
        let mut items = self.store.audit_log(merchant, limit + 1, before).await?;
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let has_more = items.len() > limit;
        items.truncate(limit);
        Ok(Page { items, has_more })
    }
}
