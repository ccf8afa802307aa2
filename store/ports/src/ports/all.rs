//! Reading "everything" that matches, within one named bound: a route that reads a whole
//! collection or a whole window reads at most [`READ_ALL`] items, and a read that reaches the
//! bound says so, in its result and in the process log, instead of growing without end or
//! cutting silently.

use crate::{Doc, Documents, Filter, Record, SeriesQuery, SeriesRead, StoreResult};

/// The most items one read of "everything" takes. Whole reads are of small collections
/// (sites, devices, rules, incidents, a tenant's accounts: thousands at most) and of one
/// machine's or one instance's records over a window (hundreds): reaching this means the data
/// outgrew the route, which then wants paging, not a bigger bound.
pub const READ_ALL: usize = 100_000;

/// What a read of everything returned: at most [`READ_ALL`] items, and whether more matched.
#[derive(Debug)]
pub struct All<T> {
    pub items: Vec<T>,
    /// More matched than [`READ_ALL`]: `items` is cut.
    pub cut: bool,
}

impl<T> All<T> {
    /// What a read stopped at [`READ_ALL`] returned; `more` when more matched, which is also
    /// said in the process log.
    fn said(items: Vec<T>, more: bool, tenant: &str, what: &str) -> Self {
        if more {
            tracing::warn!(
                tenant,
                what,
                bound = READ_ALL,
                "a read of everything reached its bound: the answer is cut"
            );
        }
        All { items, cut: more }
    }
}

impl All<Doc> {
    /// The documents of a list read with a limit of one more than [`READ_ALL`] (the one more
    /// tells that the bound was reached), cut back to the bound.
    pub fn of_list(mut items: Vec<Doc>, tenant: &str, collection: &str) -> Self {
        let more = items.len() > READ_ALL;
        items.truncate(READ_ALL);
        All::said(items, more, tenant, collection)
    }
}

impl dyn Documents {
    /// Every document of a collection matching `filter`, in key order, up to [`READ_ALL`].
    pub async fn read_all(
        &self,
        tenant: &str,
        collection: &str,
        filter: &Filter,
    ) -> StoreResult<All<Doc>> {
        let items = self
            .list(tenant, collection, filter, None, READ_ALL + 1)
            .await?;
        Ok(All::of_list(items, tenant, collection))
    }
}

impl dyn SeriesRead {
    /// Every record of a series (of one partition, or all) in `[from, to)` matching `filter`,
    /// newest first, up to [`READ_ALL`].
    pub async fn read_all(
        &self,
        tenant: &str,
        series: &str,
        partition: Option<&str>,
        from: i64,
        to: i64,
        filter: &Filter,
    ) -> StoreResult<All<Record>> {
        let page = self
            .scan(&SeriesQuery {
                tenant,
                series,
                partition,
                from,
                to,
                filter,
                after: None,
                limit: READ_ALL,
            })
            .await?;
        Ok(All::said(page.records, page.next.is_some(), tenant, series))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn docs(n: usize) -> Vec<Doc> {
        (0..n)
            .map(|i| Doc {
                key: format!("{i:06}"),
                version: 1,
                body: Value::Null,
            })
            .collect()
    }

    #[test]
    fn a_list_past_the_bound_is_cut_to_it_and_says_so() {
        let over = All::of_list(docs(READ_ALL + 1), "t", "c");
        assert_eq!(over.items.len(), READ_ALL);
        assert!(over.cut);
        assert_eq!(over.items[READ_ALL - 1].key, format!("{:06}", READ_ALL - 1));
        let at = All::of_list(docs(READ_ALL), "t", "c");
        assert_eq!((at.items.len(), at.cut), (READ_ALL, false));
        let few = All::of_list(docs(3), "t", "c");
        assert_eq!((few.items.len(), few.cut), (3, false));
    }
}
