//! A role as `system_auth.roles` stores it: what `roles` reads, what the
//! roles cache (`auth_cache`) holds, and what the checks of `auth` and
//! `authz` consult. It names no other module, so the cache, below the
//! statements that fill it, can hold it.

/// A role as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Role {
    pub name: String,
    pub can_login: bool,
    pub is_superuser: bool,
    pub salted_hash: Option<String>,
    /// The roles granted to it directly.
    pub member_of: Vec<String>,
}

/// The roles a role holds, itself included, with their flags (no hashes).
pub type HeldRoles = Vec<Role>;
