//! The one time format of every answer (docs/http-conventions.md#base-and-versioning):
//! RFC 3339 in UTC with milliseconds, `2026-11-28T16:00:02.232Z`, whatever precision a time
//! was computed or stored with (whole seconds, or down to the nanosecond).
//!
//! chrono writes a `DateTime` with as many fractional digits as it holds, and writes it with
//! `Serializer::collect_str` (from its `Display`), which no string field goes through. So an
//! answer is serialised through [`Answer`], a serializer that writes a value given to
//! `collect_str` that reads as an RFC 3339 date-time in the one format, and passes everything
//! else through: a string field is never rewritten, whatever it holds (a note that reads as
//! a date stays as its author wrote it). What is stored keeps its own precision; any RFC 3339
//! precision is read back (the window parameters, stored documents), so nothing stored before
//! this format needs rewriting.

use std::fmt::Display;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::ser::{self, Serialize, Serializer};
use serde_json::Value;

/// A time in the format of the answers.
pub fn format(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The JSON bytes of an answer, its times in the one format.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(256);
    value.serialize(Answer(&mut serde_json::Serializer::new(&mut bytes)))?;
    Ok(bytes)
}

/// A part of an answer built as a JSON value before the answer is (the alert feed's
/// `details`), its times in the one format.
pub fn to_value<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Value> {
    value.serialize(Answer(serde_json::value::Serializer))
}

/// A serializer that writes times in the one format and is otherwise `S`.
pub struct Answer<S>(S);

/// A value serialised through [`Answer`], at any depth.
struct Through<'a, T: ?Sized>(&'a T);

impl<T: Serialize + ?Sized> Serialize for Through<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(Answer(serializer))
    }
}

macro_rules! pass {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(fn $method(self, v: $ty) -> Result<S::Ok, S::Error> {
            self.0.$method(v)
        })*
    };
}

impl<S: Serializer> Serializer for Answer<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Answer<S::SerializeSeq>;
    type SerializeTuple = Answer<S::SerializeTuple>;
    type SerializeTupleStruct = Answer<S::SerializeTupleStruct>;
    type SerializeTupleVariant = Answer<S::SerializeTupleVariant>;
    type SerializeMap = Answer<S::SerializeMap>;
    type SerializeStruct = Answer<S::SerializeStruct>;
    type SerializeStructVariant = Answer<S::SerializeStructVariant>;

    pass!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_unit_struct(&'static str),
    );

    fn serialize_none(self) -> Result<S::Ok, S::Error> {
        self.0.serialize_none()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        self.0.serialize_some(&Through(value))
    }

    fn serialize_unit(self) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit_variant(name, index, variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_newtype_struct(name, &Through(value))
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0
            .serialize_newtype_variant(name, index, variant, &Through(value))
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        self.0.serialize_seq(len).map(Answer)
    }

    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        self.0.serialize_tuple(len).map(Answer)
    }

    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        self.0.serialize_tuple_struct(name, len).map(Answer)
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        self.0
            .serialize_tuple_variant(name, index, variant, len)
            .map(Answer)
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        self.0.serialize_map(len).map(Answer)
    }

    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        self.0.serialize_struct(name, len).map(Answer)
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        self.0
            .serialize_struct_variant(name, index, variant, len)
            .map(Answer)
    }

    /// A date-time in the one format; anything else written as it displays.
    fn collect_str<T: Display + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        let text = value.to_string();
        match DateTime::parse_from_rfc3339(&text) {
            Ok(t) => self.0.serialize_str(&format(t.to_utc())),
            Err(_) => self.0.serialize_str(&text),
        }
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// The compound serializers: each element, key and field through [`Answer`].
macro_rules! compound {
    ($($trait:ident { $($method:ident($($name:ident: $ty:ty),*)),* })*) => {
        $(impl<S: ser::$trait> ser::$trait for Answer<S> {
            type Ok = S::Ok;
            type Error = S::Error;
            $(fn $method<T: Serialize + ?Sized>(
                &mut self,
                $($name: $ty,)*
                value: &T,
            ) -> Result<(), S::Error> {
                self.0.$method($($name,)* &Through(value))
            })*
            fn end(self) -> Result<S::Ok, S::Error> {
                self.0.end()
            }
        })*
    };
}

compound! {
    SerializeSeq { serialize_element() }
    SerializeTuple { serialize_element() }
    SerializeTupleStruct { serialize_field() }
    SerializeTupleVariant { serialize_field() }
    SerializeMap { serialize_key(), serialize_value() }
    SerializeStruct { serialize_field(key: &'static str) }
    SerializeStructVariant { serialize_field(key: &'static str) }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Serialize;
    use serde_json::json;

    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().expect("a date-time")
    }

    #[derive(Serialize)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Seen { at: DateTime<Utc> },
        Pair(DateTime<Utc>, u8),
    }

    #[derive(Serialize)]
    struct Item {
        whole: DateTime<Utc>,
        nanos: Option<DateTime<Utc>>,
        none: Option<DateTime<Utc>>,
        note: String,
        list: Vec<DateTime<Utc>>,
        map: BTreeMap<String, DateTime<Utc>>,
        kinds: Vec<Kind>,
        #[serde(flatten)]
        extra: BTreeMap<String, DateTime<Utc>>,
        address: std::net::IpAddr,
    }

    #[test]
    fn every_time_is_written_in_utc_with_milliseconds_and_nothing_else_changes() {
        let item = Item {
            whole: at("2026-11-28T16:00:02Z"),
            nanos: Some(at("2026-11-28T16:00:02.232336743Z")),
            none: None,
            // A string field is never rewritten, even when it reads as a date.
            note: "2026-11-28T16:00:02Z".into(),
            list: vec![at("2026-11-28T18:00:02.5+02:00")],
            map: BTreeMap::from([("from".into(), at("2026-11-28T16:00:02.000001Z"))]),
            kinds: vec![
                Kind::Seen {
                    at: at("2026-11-28T16:00:02Z"),
                },
                Kind::Pair(at("2026-11-28T16:00:02.999999999Z"), 1),
            ],
            extra: BTreeMap::from([("to".into(), at("2026-11-28T16:00:03Z"))]),
            address: "10.0.0.1".parse().expect("ip"),
        };
        let want = json!({
            "whole": "2026-11-28T16:00:02.000Z",
            "nanos": "2026-11-28T16:00:02.232Z",
            "none": null,
            "note": "2026-11-28T16:00:02Z",
            "list": ["2026-11-28T16:00:02.500Z"],
            "map": {"from": "2026-11-28T16:00:02.000Z"},
            "kinds": [
                {"seen": {"at": "2026-11-28T16:00:02.000Z"}},
                {"pair": ["2026-11-28T16:00:02.999Z", 1]},
            ],
            "to": "2026-11-28T16:00:03.000Z",
            "address": "10.0.0.1",
        });
        let bytes = to_vec(&item).expect("bytes");
        assert_eq!(serde_json::from_slice::<Value>(&bytes).expect("json"), want);
        assert_eq!(to_value(&item).expect("value"), want);
        // The same as serde_json writes, times aside.
        let plain = json!({"a": [1, 2.5, "x", null, true], "b": {"c": -3}});
        assert_eq!(
            to_vec(&plain).expect("bytes"),
            serde_json::to_vec(&plain).expect("bytes")
        );
    }

    #[test]
    fn a_time_written_in_the_one_format_reads_back_as_the_same_millisecond() {
        for text in [
            "2026-11-28T16:00:02Z",
            "2026-11-28T16:00:02.232Z",
            "2026-11-28T16:00:02.232336743Z",
            "2026-11-28T17:00:02.232+01:00",
        ] {
            let t = at(text);
            let written = format(t);
            assert_eq!(written.len(), "2026-11-28T16:00:02.232Z".len(), "{written}");
            assert_eq!(
                at(&written).timestamp_millis(),
                t.timestamp_millis(),
                "{text}"
            );
        }
    }
}
