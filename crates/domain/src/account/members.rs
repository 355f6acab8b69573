//! The team's rules: who may change whom, and the last owner stays.

use crate::account::capability::{Action, Role};
use crate::error::Error;

/// A change of one membership.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MembershipChange {
    /// A new role.
    SetRole(Role),
    /// The membership ends.
    Remove,
}

/// The action a change of a member of role `current` needs: touching an owner, or making one,
/// needs [`Action::ManageOwners`]; any other change [`Action::ManageMembers`].
pub fn action_for(current: Role, change: MembershipChange) -> Action {
    let makes_owner = change == MembershipChange::SetRole(Role::Owner);
    if current == Role::Owner || makes_owner { Action::ManageOwners } else { Action::ManageMembers }
}

/// The last-owner rule, checked by the store with the merchant's memberships locked: a change
/// that would leave the merchant without an owner is refused. `owners`: how many owners it has
/// now. Errors: `AuthForbidden`.
pub fn check_change(current: Role, owners: usize, change: MembershipChange) -> Result<(), Error> {
    let leaves_owner = match change {
        MembershipChange::Remove => true,
        MembershipChange::SetRole(role) => role != Role::Owner,
    };
    if current == Role::Owner && leaves_owner && owners <= 1 {
        return Err(Error::AuthForbidden(
            "the last owner cannot be removed or given another role; make another member owner first".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_owner_stays() {
        let demote = MembershipChange::SetRole(Role::Admin);
        assert!(check_change(Role::Owner, 1, demote).is_err());
        assert!(check_change(Role::Owner, 1, MembershipChange::Remove).is_err());
        assert!(check_change(Role::Owner, 1, MembershipChange::SetRole(Role::Owner)).is_ok());
        assert!(check_change(Role::Owner, 2, MembershipChange::Remove).is_ok());
        assert!(check_change(Role::Admin, 1, MembershipChange::Remove).is_ok());
    }

    #[test]
    fn owners_need_the_owners_action() {
        assert_eq!(action_for(Role::Owner, MembershipChange::Remove), Action::ManageOwners);
        assert_eq!(action_for(Role::Viewer, MembershipChange::SetRole(Role::Owner)), Action::ManageOwners);
        assert_eq!(action_for(Role::Viewer, MembershipChange::SetRole(Role::Admin)), Action::ManageMembers);
    }
}
