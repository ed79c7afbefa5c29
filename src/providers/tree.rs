//! A decoded event held as a flat tree of borrowed values: what the binding
//! builds from a Python dict, so that the adapters' typed, borrowing decode
//! reads it directly (no JSON text in between, no allocation per string).
//!
//! The nodes are in pre-order: an array is followed by its items, an object by
//! its (key, value) pairs, each key a [`Node::Str`]; every container records
//! where its subtree ends, so skipping a field the adapter does not read costs
//! one step. Strings live in a side table the tree borrows.
//!
//! Pure Rust: nothing here names pyo3.

use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IntoDeserializer, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};
use serde::forward_to_deserialize_any;

/// One value of a [`Tree`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Node {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    /// Always finite (JSON has no NaN or infinities).
    F64(f64),
    /// The string at this position of the tree's string table.
    Str(usize),
    /// `len` items follow; the subtree ends before node `end`.
    Array {
        len: usize,
        end: usize,
    },
    /// `len` (key, value) pairs follow; the subtree ends before node `end`.
    Object {
        len: usize,
        end: usize,
    },
}

/// An event as a flat tree: `nodes[0]` is the root.
#[derive(Debug, Clone, Copy)]
pub struct Tree<'a> {
    nodes: &'a [Node],
    strs: &'a [&'a str],
}

/// Why a tree cannot be built (see [`TreeBuilder`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeError {
    /// A container was closed that was never opened, or one was left open.
    Unbalanced,
}

impl fmt::Display for TreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the event tree is unbalanced (a container closed twice or left open)")
    }
}

impl std::error::Error for TreeError {}

/// Builds the nodes of a [`Tree`] in pre-order; reusable (`clear`) so that a
/// stream of events allocates its buffers once.
#[derive(Debug, Clone, Default)]
pub struct TreeBuilder {
    nodes: Vec<Node>,
    open: Vec<usize>,
}

impl TreeBuilder {
    /// Forgets the last tree, keeping the buffers.
    pub fn clear(&mut self) {
        self.nodes.clear();
        self.open.clear();
    }

    /// Adds a scalar (or a string: its position in the string table).
    pub fn push(&mut self, node: Node) {
        self.nodes.push(node);
    }

    /// Opens an array of `len` items.
    pub fn open_array(&mut self, len: usize) {
        self.open.push(self.nodes.len());
        self.nodes.push(Node::Array { len, end: 0 });
    }

    /// Opens an object of `len` pairs: push each key as a [`Node::Str`], then its value.
    pub fn open_object(&mut self, len: usize) {
        self.open.push(self.nodes.len());
        self.nodes.push(Node::Object { len, end: 0 });
    }

    /// Closes the innermost open container.
    ///
    /// # Errors
    /// [`TreeError::Unbalanced`] when none is open.
    pub fn close(&mut self) -> Result<(), TreeError> {
        let end = self.nodes.len();
        let at = self.open.pop().ok_or(TreeError::Unbalanced)?;
        match self.nodes.get_mut(at) {
            Some(Node::Array { end: e, .. } | Node::Object { end: e, .. }) => {
                *e = end;
                Ok(())
            }
            _ => Err(TreeError::Unbalanced),
        }
    }

    /// The finished tree over the string table `strs`.
    ///
    /// # Errors
    /// [`TreeError::Unbalanced`] when a container is still open or nothing was pushed.
    pub fn tree<'a>(&'a self, strs: &'a [&'a str]) -> Result<Tree<'a>, TreeError> {
        if !self.open.is_empty() || self.nodes.is_empty() {
            return Err(TreeError::Unbalanced);
        }
        Ok(Tree {
            nodes: &self.nodes,
            strs,
        })
    }
}

impl<'a> Tree<'a> {
    /// True when the root is an object.
    #[must_use]
    pub fn is_object(&self) -> bool {
        matches!(self.nodes.first(), Some(Node::Object { .. }))
    }

    /// True when the root is an array.
    #[must_use]
    pub fn is_array(&self) -> bool {
        matches!(self.nodes.first(), Some(Node::Array { .. }))
    }

    /// The value of the root object's member `key`, as a tree position.
    fn member(&self, key: &str) -> Option<usize> {
        let Some(Node::Object { len, .. }) = self.nodes.first() else {
            return None;
        };
        let mut pos = 1;
        for _ in 0..*len {
            let name = match self.nodes.get(pos)? {
                Node::Str(i) => self.strs.get(*i).copied()?,
                _ => return None,
            };
            let value = pos + 1;
            if name == key {
                return Some(value);
            }
            pos = match self.nodes.get(value)? {
                Node::Array { end, .. } | Node::Object { end, .. } => *end,
                _ => value + 1,
            };
        }
        None
    }

    /// True when the root object has the member `key`.
    #[must_use]
    pub fn has(&self, key: &str) -> bool {
        self.member(key).is_some()
    }

    /// The root object's member `key` when it is a string.
    #[must_use]
    pub fn str_member(&self, key: &str) -> Option<&'a str> {
        match self.nodes.get(self.member(key)?)? {
            Node::Str(i) => self.strs.get(*i).copied(),
            _ => None,
        }
    }

    /// The whole tree as a JSON value (cold paths: a whole response body, an array
    /// of events).
    ///
    /// # Errors
    /// When the tree is malformed.
    pub fn to_value(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde::Deserialize::deserialize(&mut self.deserializer())
    }

    /// The root as a string, if it is one.
    #[must_use]
    pub fn as_str(&self) -> Option<&'a str> {
        match self.nodes.first() {
            Some(Node::Str(i)) => self.strs.get(*i).copied(),
            _ => None,
        }
    }

    /// A serde deserializer over the whole tree.
    #[must_use]
    pub fn deserializer(&self) -> Cursor<'a> {
        Cursor {
            nodes: self.nodes,
            strs: self.strs,
            pos: 0,
        }
    }
}

/// Reads a [`Tree`] from its root; `&mut Cursor` is a [`serde::Deserializer`]
/// whose errors are `serde_json::Error`s, like the JSON text path.
#[derive(Debug)]
pub struct Cursor<'a> {
    nodes: &'a [Node],
    strs: &'a [&'a str],
    pos: usize,
}

type E = serde_json::Error;

fn broken() -> E {
    de::Error::custom("the event tree is malformed")
}

impl<'a> Cursor<'a> {
    fn next(&mut self) -> Result<Node, E> {
        let node = *self.nodes.get(self.pos).ok_or_else(broken)?;
        self.pos += 1;
        Ok(node)
    }

    fn peek(&self) -> Result<Node, E> {
        self.nodes.get(self.pos).copied().ok_or_else(broken)
    }

    fn str_at(&self, i: usize) -> Result<&'a str, E> {
        self.strs.get(i).copied().ok_or_else(broken)
    }

    /// Moves past the value at the cursor.
    fn skip(&mut self) -> Result<(), E> {
        match self.next()? {
            Node::Array { end, .. } | Node::Object { end, .. } => {
                if end < self.pos || end > self.nodes.len() {
                    return Err(broken());
                }
                self.pos = end;
            }
            _ => {}
        }
        Ok(())
    }

    fn unexpected(&self, node: Node) -> de::Unexpected<'a> {
        match node {
            Node::Null => de::Unexpected::Unit,
            Node::Bool(b) => de::Unexpected::Bool(b),
            Node::I64(i) => de::Unexpected::Signed(i),
            Node::U64(u) => de::Unexpected::Unsigned(u),
            Node::F64(f) => de::Unexpected::Float(f),
            Node::Str(i) => de::Unexpected::Str(self.strs.get(i).copied().unwrap_or_default()),
            Node::Array { .. } => de::Unexpected::Seq,
            Node::Object { .. } => de::Unexpected::Map,
        }
    }
}

/// The items of an array (`Some(end)`) or the pairs of an object.
struct Items<'c, 'a> {
    cur: &'c mut Cursor<'a>,
    left: usize,
    end: usize,
}

impl Items<'_, '_> {
    /// After the visitor: every item must have been read (like serde_json's
    /// "trailing characters"), then the cursor is past the container.
    fn finish(self) -> Result<(), E> {
        if self.left != 0 {
            return Err(de::Error::invalid_length(
                self.left,
                &"fewer elements in the container",
            ));
        }
        if self.cur.pos != self.end {
            return Err(broken());
        }
        Ok(())
    }
}

impl<'de> SeqAccess<'de> for Items<'_, 'de> {
    type Error = E;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, E> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.cur).map(Some)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

impl<'de> MapAccess<'de> for Items<'_, 'de> {
    type Error = E;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, E> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.cur).map(Some)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, E> {
        seed.deserialize(&mut *self.cur)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

impl<'de> Deserializer<'de> for &mut Cursor<'de> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match self.next()? {
            Node::Null => visitor.visit_unit(),
            Node::Bool(b) => visitor.visit_bool(b),
            Node::I64(i) => visitor.visit_i64(i),
            Node::U64(u) => visitor.visit_u64(u),
            Node::F64(f) => visitor.visit_f64(f),
            Node::Str(i) => visitor.visit_borrowed_str(self.str_at(i)?),
            Node::Array { len, end } => {
                let mut items = Items {
                    cur: self,
                    left: len,
                    end,
                };
                let value = visitor.visit_seq(&mut items)?;
                items.finish()?;
                Ok(value)
            }
            Node::Object { len, end } => {
                let mut items = Items {
                    cur: self,
                    left: len,
                    end,
                };
                let value = visitor.visit_map(&mut items)?;
                items.finish()?;
                Ok(value)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        if self.peek()? == Node::Null {
            self.pos += 1;
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        self.skip()?;
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, E> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, E> {
        match self.next()? {
            Node::Str(i) => visitor.visit_enum(self.str_at(i)?.into_deserializer()),
            Node::Object { len: 1, end } => {
                let value = visitor.visit_enum(Variant { cur: &mut *self })?;
                if self.pos != end {
                    return Err(broken());
                }
                Ok(value)
            }
            other => Err(de::Error::invalid_type(
                self.unexpected(other),
                &"a string or an object of one key",
            )),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
    }
}

/// An enum written as `{"Variant": value}`.
struct Variant<'c, 'a> {
    cur: &'c mut Cursor<'a>,
}

impl<'de, 'c> EnumAccess<'de> for Variant<'c, 'de> {
    type Error = E;
    type Variant = Self;
    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self), E> {
        let key = seed.deserialize(&mut *self.cur)?;
        Ok((key, self))
    }
}

impl<'de> VariantAccess<'de> for Variant<'_, 'de> {
    type Error = E;
    fn unit_variant(self) -> Result<(), E> {
        de::Deserialize::deserialize(&mut *self.cur)
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, E> {
        seed.deserialize(&mut *self.cur)
    }
    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, E> {
        self.cur.deserialize_any(visitor)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, E> {
        self.cur.deserialize_any(visitor)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::Value;

    /// The tree of a JSON value, strings in a side table (what the binding does
    /// for a Python dict).
    pub(crate) fn build(v: &Value, b: &mut TreeBuilder, strs: &mut Vec<String>) {
        match v {
            Value::Null => b.push(Node::Null),
            Value::Bool(x) => b.push(Node::Bool(*x)),
            Value::Number(n) => b.push(match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => Node::I64(i),
                (None, Some(u)) => Node::U64(u),
                _ => Node::F64(n.as_f64().unwrap_or_default()),
            }),
            Value::String(s) => {
                b.push(Node::Str(strs.len()));
                strs.push(s.clone());
            }
            Value::Array(items) => {
                b.open_array(items.len());
                for item in items {
                    build(item, b, strs);
                }
                assert!(b.close().is_ok());
            }
            Value::Object(map) => {
                b.open_object(map.len());
                for (k, item) in map {
                    b.push(Node::Str(strs.len()));
                    strs.push(k.clone());
                    build(item, b, strs);
                }
                assert!(b.close().is_ok());
            }
        }
    }

    fn round_trip<T: for<'de> Deserialize<'de> + PartialEq + fmt::Debug>(text: &str) {
        let v: Value = serde_json::from_str(text).unwrap_or_default();
        let mut b = TreeBuilder::default();
        let mut owned = Vec::new();
        build(&v, &mut b, &mut owned);
        let strs: Vec<&str> = owned.iter().map(String::as_str).collect();
        let tree = b.tree(&strs);
        assert!(tree.is_ok());
        let Ok(tree) = tree else { return };
        let from_tree = T::deserialize(&mut tree.deserializer());
        let from_text = serde_json::from_str::<T>(text);
        match (from_tree, from_text) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(_), Err(_)) => {}
            (a, b) => panic!("{text}: tree {a:?} vs text {b:?}"),
        }
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Call {
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        index: Option<i64>,
        #[serde(default)]
        args: Option<Vec<f64>>,
    }

    #[test]
    fn typed_decode_matches_the_json_text_path() {
        round_trip::<Value>(
            r#"{"z":[1,-2,3.5,null,true,"x"],"a":{"b":{}},"u":18446744073709551615}"#,
        );
        round_trip::<Call>(r#"{"name":"f","ignored":{"deep":[1,[2,{"x":3}]]},"index":3}"#);
        round_trip::<Call>(r#"{"name":5}"#);
        round_trip::<Call>(r#"{"args":[1,2,"x"]}"#);
        round_trip::<Vec<Call>>(r#"[{"index":1},{"name":"g","args":[]}]"#);
        round_trip::<(i64, i64)>("[1,2,3]");
    }

    #[test]
    fn strings_are_borrowed() {
        let mut b = TreeBuilder::default();
        b.open_object(1);
        b.push(Node::Str(0));
        b.push(Node::Str(1));
        assert!(b.close().is_ok());
        let strs = ["name", "weather"];
        let Ok(tree) = b.tree(&strs) else {
            panic!("balanced")
        };
        #[derive(Deserialize)]
        struct Named<'a> {
            #[serde(borrow)]
            name: &'a str,
        }
        let call = Named::deserialize(&mut tree.deserializer());
        assert!(matches!(call, Ok(Named { name: "weather" })));
        assert!(tree.is_object());
    }

    #[test]
    fn unbalanced_and_empty_trees_are_refused() {
        let mut b = TreeBuilder::default();
        assert!(b.tree(&[]).is_err());
        assert_eq!(b.close(), Err(TreeError::Unbalanced));
        b.open_array(0);
        assert!(b.tree(&[]).is_err());
        assert!(b.close().is_ok());
        assert!(b.tree(&[]).is_ok());
        b.clear();
        assert!(b.tree(&[]).is_err());
    }

    #[test]
    fn a_bad_string_position_is_an_error_not_a_panic() {
        let mut b = TreeBuilder::default();
        b.push(Node::Str(9));
        let Ok(tree) = b.tree(&[]) else {
            panic!("balanced")
        };
        assert!(String::deserialize(&mut tree.deserializer()).is_err());
        assert_eq!(tree.as_str(), None);
    }
}
