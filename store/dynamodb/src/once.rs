//! `UpdateItem`s that add (`ADD`) made once whatever the SDK retries.
//!
//! An `ADD` is not idempotent, and the SDK retries a call whose answer was lost (a timeout, a
//! dropped connection) after the change was made: the retry would add twice. So such a change
//! also notes its own random id on the item (`once`), on the condition that the id is not
//! already there: a retry of a change that was made meets its own id and fails the condition
//! ([`super::client::is_condition_failed`]). Only another change of the same item between the
//! lost answer and the retry (tens of milliseconds) can still make it add twice.

use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;

use super::item::s;

/// The clause to add to the update's `SET`.
pub(super) const SET_ONCE: &str = "#once = :once";

/// The condition of the change (joined with `AND` to the change's own, if any).
pub(super) const NOT_MADE: &str = "(attribute_not_exists(#once) OR #once <> :once)";

/// Gives the update its id (with [`SET_ONCE`] in its `SET` and [`NOT_MADE`] in its
/// condition).
pub(super) fn once(update: UpdateItemFluentBuilder) -> UpdateItemFluentBuilder {
    update
        .expression_attribute_names("#once", "once")
        .expression_attribute_values(":once", s(format!("{:016x}", rand::random::<u64>())))
}
