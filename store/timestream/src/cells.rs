//! Query results read through their `ColumnInfo` into typed [`Cell`]s.

use std::collections::HashMap;

use aws_sdk_timestreamquery::types::{ColumnInfo, Datum, ScalarType, Type};

use netops_store::{StoreError, StoreResult};

/// A typed value of a query result, parsed according to its column's type.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Varchar(String),
    BigInt(i64),
    Integer(i64),
    Double(f64),
    Boolean(bool),
    /// Milliseconds since the epoch (Timestream returns nanosecond text, UTC).
    Timestamp(i64),
    /// Types kept as their text: DATE, TIME, intervals, UNKNOWN.
    Text(String),
    Array(Vec<Cell>),
    Row(Vec<Cell>),
    /// `(time ms, value)` points of a TIMESERIES column.
    TimeSeries(Vec<(i64, Cell)>),
}

impl Cell {
    pub(super) fn as_str(&self) -> Option<&str> {
        match self {
            Cell::Varchar(s) | Cell::Text(s) => Some(s),
            _ => None,
        }
    }
}

pub(super) fn data_err(msg: impl Into<String>) -> StoreError {
    StoreError::Data(msg.into())
}

/// Parses Timestream's timestamp text (`2024-05-01 12:34:56.789000000`) into milliseconds.
pub fn parse_timestamp(text: &str) -> StoreResult<i64> {
    let t = chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f")
        .map_err(|_| data_err(format!("bad timestamp '{text}'")))?;
    Ok(t.and_utc().timestamp_millis())
}

/// One datum, read according to the column type.
pub fn parse_datum(ty: Option<&Type>, datum: &Datum) -> StoreResult<Cell> {
    if datum.null_value() == Some(true) {
        return Ok(Cell::Null);
    }
    let Some(ty) = ty else {
        return Err(data_err("column without a type"));
    };
    if let Some(inner) = ty.array_column_info() {
        return datum
            .array_value()
            .iter()
            .map(|d| parse_datum(inner.r#type(), d))
            .collect::<StoreResult<_>>()
            .map(Cell::Array);
    }
    if !ty.row_column_info().is_empty() {
        let row = datum
            .row_value()
            .ok_or_else(|| data_err("row column without a row value"))?;
        if row.data().len() != ty.row_column_info().len() {
            return Err(data_err("row value and row type differ in length"));
        }
        return ty
            .row_column_info()
            .iter()
            .zip(row.data())
            .map(|(c, d)| parse_datum(c.r#type(), d))
            .collect::<StoreResult<_>>()
            .map(Cell::Row);
    }
    if let Some(inner) = ty.time_series_measure_value_column_info() {
        return datum
            .time_series_value()
            .iter()
            .map(|p| {
                let value = match p.value() {
                    Some(v) => parse_datum(inner.r#type(), v)?,
                    None => Cell::Null,
                };
                Ok((parse_timestamp(p.time())?, value))
            })
            .collect::<StoreResult<_>>()
            .map(Cell::TimeSeries);
    }
    let scalar = ty
        .scalar_type()
        .ok_or_else(|| data_err("column type without a kind"))?;
    let text = datum
        .scalar_value()
        .ok_or_else(|| data_err("scalar column without a value"))?;
    let bad = || data_err(format!("'{text}' is not a valid {}", scalar.as_str()));
    Ok(match scalar {
        ScalarType::Varchar => Cell::Varchar(text.to_owned()),
        ScalarType::Bigint => Cell::BigInt(text.parse().map_err(|_| bad())?),
        ScalarType::Integer => Cell::Integer(text.parse().map_err(|_| bad())?),
        ScalarType::Double => Cell::Double(text.parse().map_err(|_| bad())?),
        ScalarType::Boolean => Cell::Boolean(text.parse().map_err(|_| bad())?),
        ScalarType::Timestamp => Cell::Timestamp(parse_timestamp(text)?),
        _ => Cell::Text(text.to_owned()),
    })
}

/// The rows of a result as maps from column name to typed cell.
pub fn parse_rows(
    columns: &[ColumnInfo],
    rows: &[aws_sdk_timestreamquery::types::Row],
) -> StoreResult<Vec<HashMap<String, Cell>>> {
    rows.iter()
        .map(|row| {
            if row.data().len() != columns.len() {
                return Err(data_err("row and column info differ in length"));
            }
            columns
                .iter()
                .zip(row.data())
                .map(|(c, d)| {
                    let name = c.name().ok_or_else(|| data_err("column without a name"))?;
                    Ok((name.to_owned(), parse_datum(c.r#type(), d)?))
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_to_milliseconds() {
        assert_eq!(
            parse_timestamp("1970-01-01 00:00:01.500000000").ok(),
            Some(1_500)
        );
        assert_eq!(
            parse_timestamp("2024-05-01 12:00:00").ok(),
            Some(1_714_564_800_000)
        );
        assert!(parse_timestamp("yesterday").is_err());
    }
}
