//! The SQL of a series read: literals and identifiers quoted, newest first, `LIMIT` only when
//! no predicate is checked after the query.

use netops_store::SeriesQuery;

/// A SQL string literal.
fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A quoted identifier.
fn ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// The query for one newest-first read (every shape: with or without partition, position,
/// and `LIMIT`).
pub fn series_sql(database: &str, q: &SeriesQuery<'_>) -> String {
    let mut sql = format!(
        "SELECT \"partition\", \"id\", \"time\", \"body\" FROM {}.{} WHERE \"tenant\" = {} AND \"time\" >= from_milliseconds({}) AND \"time\" < from_milliseconds({})",
        ident(database),
        ident(q.series),
        literal(q.tenant),
        q.from,
        q.to
    );
    if let Some(p) = q.partition {
        sql.push_str(&format!(" AND \"partition\" = {}", literal(p)));
    }
    if let Some(pos) = q.after {
        sql.push_str(&format!(
            " AND (\"time\" < from_milliseconds({ts}) OR (\"time\" = from_milliseconds({ts}) AND \"id\" < {id}))",
            ts = pos.ts,
            id = literal(&pos.id)
        ));
    }
    sql.push_str(" ORDER BY \"time\" DESC, \"id\" DESC");
    if q.filter.0.is_empty() {
        sql.push_str(&format!(" LIMIT {}", q.limit.saturating_add(1)));
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::*;
    use netops_store::{Filter, Position, Pred};

    fn query<'a>(
        filter: &'a Filter,
        partition: Option<&'a str>,
        after: Option<&'a Position>,
    ) -> SeriesQuery<'a> {
        SeriesQuery {
            tenant: "acme",
            series: "flows",
            partition,
            from: 1_000,
            to: 2_000,
            filter,
            after,
            limit: 50,
        }
    }

    #[test]
    fn the_sql_of_a_first_page_without_predicates_carries_a_limit_of_one_more() {
        let f = Filter::all();
        assert_eq!(
            series_sql("netops", &query(&f, None, None)),
            "SELECT \"partition\", \"id\", \"time\", \"body\" FROM \"netops\".\"flows\" WHERE \"tenant\" = 'acme' AND \"time\" >= from_milliseconds(1000) AND \"time\" < from_milliseconds(2000) ORDER BY \"time\" DESC, \"id\" DESC LIMIT 51"
        );
    }

    #[test]
    fn the_sql_of_a_partition_resumed_after_a_position_is_strictly_older() {
        let f = Filter::all().and(Pred::Eq("proto", serde_json::json!("TCP")));
        let pos = Position {
            ts: 1_500,
            id: "o'brien".into(),
        };
        let sql = series_sql("db", &query(&f, Some("PAR-LT-0001"), Some(&pos)));
        assert!(sql.contains(" AND \"partition\" = 'PAR-LT-0001'"), "{sql}");
        assert!(
            sql.contains(" AND (\"time\" < from_milliseconds(1500) OR (\"time\" = from_milliseconds(1500) AND \"id\" < 'o''brien'))"),
            "{sql}"
        );
        assert!(
            sql.ends_with("ORDER BY \"time\" DESC, \"id\" DESC"),
            "predicates are checked client-side, so no LIMIT: {sql}"
        );
    }

    #[test]
    fn identifiers_and_literals_are_quoted() {
        let f = Filter::all();
        let mut q = query(&f, None, None);
        q.tenant = "a'; DROP";
        q.series = "we\"ird";
        let sql = series_sql("d", &q);
        assert!(sql.contains("FROM \"d\".\"we\"\"ird\""), "{sql}");
        assert!(sql.contains("\"tenant\" = 'a''; DROP'"), "{sql}");
    }
}
