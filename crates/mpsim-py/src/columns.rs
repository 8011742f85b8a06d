//! The flows of a summary as Arrow column buffers, for a table built without a JSON line and
//! without a Python object per flow.
//!
//! The columns are those Arrow's JSON reader infers from the flows written one JSON object a
//! line (Apache Arrow's documentation, "Reading JSON files", pyarrow 15-19): a number written
//! with a fraction or an exponent makes a column `double`, other numbers `int64`, `true` and
//! `false` `bool`, text `string`, an array a list and an object a struct whose fields come in
//! the order they first appear; a field missing from a row is null there, and a column with
//! nothing but nulls has the `null` type. A value has the form serde_json gives it in the
//! summary's text (an integer or not, null for a non-finite float).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use serde::ser::{Serialize, SerializeSeq, SerializeStruct, Serializer};
use std::fmt;

/// A value as serialised to JSON, with the order of an object's fields kept.
#[derive(Debug, PartialEq)]
enum Node {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Node>),
    Obj(Vec<(&'static str, Node)>),
}

/// Makes a [`Node`] of a value as serde_json would write it: a non-finite float is null, and
/// an `f32` is the number its shortest text stands for.
struct ToNode;

type Fail = serde::ser::Impossible<Node, Error>;

#[derive(Debug)]
struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl serde::ser::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

fn unsupported(what: &str) -> Error {
    Error(format!("a summary holds no {what}"))
}

impl Serializer for ToNode {
    type Ok = Node;
    type Error = Error;
    type SerializeSeq = Items;
    type SerializeTuple = Fail;
    type SerializeTupleStruct = Fail;
    type SerializeTupleVariant = Fail;
    type SerializeMap = Fail;
    type SerializeStruct = Fields;
    type SerializeStructVariant = Fail;

    fn serialize_bool(self, v: bool) -> Result<Node, Error> {
        Ok(Node::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Node, Error> {
        Ok(Node::Int(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<Node, Error> {
        Ok(Node::Int(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<Node, Error> {
        Ok(Node::Int(v.into()))
    }
    fn serialize_i64(self, v: i64) -> Result<Node, Error> {
        Ok(Node::Int(v))
    }
    fn serialize_u8(self, v: u8) -> Result<Node, Error> {
        Ok(Node::Int(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<Node, Error> {
        Ok(Node::Int(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<Node, Error> {
        Ok(Node::Int(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<Node, Error> {
        i64::try_from(v).map(Node::Int).map_err(|_| Error(format!("{v} does not fit in int64")))
    }
    fn serialize_f32(self, v: f32) -> Result<Node, Error> {
        self.serialize_f64(v.to_string().parse().unwrap_or(f64::NAN))
    }
    fn serialize_f64(self, v: f64) -> Result<Node, Error> {
        Ok(if v.is_finite() { Node::Float(v) } else { Node::Null })
    }
    fn serialize_char(self, v: char) -> Result<Node, Error> {
        Ok(Node::Str(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Node, Error> {
        Ok(Node::Str(v.to_owned()))
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<Node, Error> {
        Err(unsupported("bytes"))
    }
    fn serialize_none(self) -> Result<Node, Error> {
        Ok(Node::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<Node, Error> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<Node, Error> {
        Ok(Node::Null)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Node, Error> {
        Ok(Node::Null)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<Node, Error> {
        Ok(Node::Str(variant.to_owned()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<Node, Error> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(self, _: &'static str, _: u32, _: &'static str, _: &T) -> Result<Node, Error> {
        Err(unsupported("enum with data"))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Items, Error> {
        Ok(Items(Vec::with_capacity(len.unwrap_or(0))))
    }
    fn serialize_tuple(self, _: usize) -> Result<Fail, Error> {
        Err(unsupported("tuple"))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Fail, Error> {
        Err(unsupported("tuple"))
    }
    fn serialize_tuple_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Fail, Error> {
        Err(unsupported("enum with data"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Fail, Error> {
        Err(unsupported("map"))
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Fields, Error> {
        Ok(Fields(Vec::with_capacity(len)))
    }
    fn serialize_struct_variant(self, _: &'static str, _: u32, _: &'static str, _: usize) -> Result<Fail, Error> {
        Err(unsupported("enum with data"))
    }
}

struct Items(Vec<Node>);

impl SerializeSeq for Items {
    type Ok = Node;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.0.push(v.serialize(ToNode)?);
        Ok(())
    }
    fn end(self) -> Result<Node, Error> {
        Ok(Node::List(self.0))
    }
}

struct Fields(Vec<(&'static str, Node)>);

impl SerializeStruct for Fields {
    type Ok = Node;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Result<(), Error> {
        self.0.push((key, v.serialize(ToNode)?));
        Ok(())
    }
    fn end(self) -> Result<Node, Error> {
        Ok(Node::Obj(self.0))
    }
}

/// `flows` as `[(name, column), ...]`, a column being `(kind, rows, validity, ...)`: validity
/// is None or one bit a row (Arrow's layout, least significant bit first), and by kind:
/// "null"; "bool", bits; "i64", "f64", 8 little-endian bytes a row; "str", UTF-8 bytes and
/// rows + 1 int32 offsets; "list", rows + 1 int32 offsets and the column of the items;
/// "struct", `[(name, column), ...]`.
pub fn flows_columns<'py, T: Serialize>(py: Python<'py>, flows: &[T]) -> PyResult<Bound<'py, PyList>> {
    let nodes = flows.iter().map(|f| f.serialize(ToNode)).collect::<Result<Vec<_>, _>>().map_err(|e| PyValueError::new_err(e.0))?;
    let rows: Vec<&Node> = nodes.iter().collect();
    fields(py, &rows)
}

/// The fields of the objects `rows` (null for a row that is not an object), in the order
/// they first appear.
fn fields<'py>(py: Python<'py>, rows: &[&Node]) -> PyResult<Bound<'py, PyList>> {
    let mut names: Vec<&'static str> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for r in rows {
        if let Node::Obj(fs) = r {
            for (k, _) in fs {
                if seen.insert(*k) {
                    names.push(k);
                }
            }
        }
    }
    let out = PyList::empty_bound(py);
    for (i, name) in names.into_iter().enumerate() {
        // most rows have every field, in the same order: look at the i-th first
        let col: Vec<&Node> = rows
            .iter()
            .map(|r| match r {
                Node::Obj(fs) => match fs.get(i) {
                    Some((k, v)) if *k == name => v,
                    _ => fs.iter().find(|(k, _)| *k == name).map_or(&Node::Null, |(_, v)| v),
                },
                _ => &Node::Null,
            })
            .collect();
        out.append((name, column(py, &col).map_err(|e| prefix(py, name, e))?))?;
    }
    Ok(out)
}

fn prefix(py: Python<'_>, name: &str, e: PyErr) -> PyErr {
    PyValueError::new_err(format!("{name}: {}", e.value_bound(py)))
}

/// Bits of `rows` (least significant first) for which `f` holds.
fn bits(rows: &[&Node], f: impl Fn(&Node) -> bool) -> Vec<u8> {
    let mut out = vec![0u8; rows.len().div_ceil(8)];
    for (i, r) in rows.iter().enumerate() {
        if f(r) {
            out[i / 8] |= 1 << (i % 8);
        }
    }
    out
}

fn column(py: Python<'_>, rows: &[&Node]) -> PyResult<PyObject> {
    // the kind: the widest of the values (an integer among floats is a float)
    let mut kind = "null";
    for r in rows {
        let k = match r {
            Node::Null => continue,
            Node::Bool(_) => "bool",
            Node::Int(_) => "i64",
            Node::Float(_) => "f64",
            Node::Str(_) => "str",
            Node::List(_) => "list",
            Node::Obj(_) => "struct",
        };
        kind = match (kind, k) {
            ("null", k) | ("i64", k @ "f64") => k,
            ("f64", "i64") => "f64",
            (a, b) if a == b => a,
            (a, b) => return Err(PyValueError::new_err(format!("values of two types ({a} and {b})"))),
        };
    }
    let n = rows.len();
    let bytes = |b: &[u8]| PyBytes::new_bound(py, b);
    let nulls = rows.iter().any(|r| matches!(r, Node::Null));
    let validity = if nulls { bytes(&bits(rows, |r| !matches!(r, Node::Null))).into_any() } else { py.None().into_bound(py) };
    let offsets = |lens: &mut dyn Iterator<Item = usize>| -> PyResult<Vec<u8>> {
        let mut out = Vec::with_capacity((n + 1) * 4);
        let mut at = 0usize;
        out.extend_from_slice(&0i32.to_le_bytes());
        for l in lens {
            at += l;
            let end = i32::try_from(at).map_err(|_| PyValueError::new_err("more than 2 GiB in a column"))?;
            out.extend_from_slice(&end.to_le_bytes());
        }
        Ok(out)
    };
    let t = match kind {
        "null" => (kind, n).into_py(py),
        "bool" => (kind, n, validity, bytes(&bits(rows, |r| matches!(r, Node::Bool(true))))).into_py(py),
        "i64" | "f64" => {
            let mut data = Vec::with_capacity(n * 8);
            for r in rows {
                let v = match (kind, r) {
                    ("i64", Node::Int(v)) => v.to_le_bytes(),
                    (_, Node::Int(v)) => (*v as f64).to_le_bytes(),
                    (_, Node::Float(v)) => v.to_le_bytes(),
                    _ => [0; 8],
                };
                data.extend_from_slice(&v);
            }
            (kind, n, validity, bytes(&data)).into_py(py)
        }
        "str" => {
            fn text(r: &Node) -> &str {
                match r {
                    Node::Str(s) => s,
                    _ => "",
                }
            }
            let mut data = Vec::new();
            for r in rows {
                data.extend_from_slice(text(r).as_bytes());
            }
            let offs = offsets(&mut rows.iter().map(|r| text(r).len()))?;
            (kind, n, validity, bytes(&data), bytes(&offs)).into_py(py)
        }
        "list" => {
            fn items(r: &Node) -> &[Node] {
                match r {
                    Node::List(xs) => xs,
                    _ => &[],
                }
            }
            let offs = offsets(&mut rows.iter().map(|r| items(r).len()))?;
            let all: Vec<&Node> = rows.iter().flat_map(|r| items(r).iter()).collect();
            (kind, n, validity, bytes(&offs), column(py, &all)?).into_py(py)
        }
        _ => (kind, n, validity, fields(py, rows)?).into_py(py),
    };
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Row {
        b: u64,
        a: f64,
        c: Vec<Option<bool>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        d: Option<String>,
        e: f64,
    }

    #[test]
    fn nodes_are_what_serde_json_writes_in_field_order() {
        let row = Row { b: 1, a: 1.0, c: vec![None, Some(true)], d: None, e: f64::NAN };
        let want = Node::Obj(vec![
            ("b", Node::Int(1)),
            ("a", Node::Float(1.0)),
            ("c", Node::List(vec![Node::Null, Node::Bool(true)])),
            ("e", Node::Null),
        ]);
        assert_eq!(row.serialize(ToNode).unwrap(), want);
        assert_eq!(serde_json::to_string(&row).unwrap(), r#"{"b":1,"a":1.0,"c":[null,true],"e":null}"#);
        assert!(u64::MAX.serialize(ToNode).is_err());
    }

    #[test]
    fn bits_are_least_significant_first() {
        let (t, f) = (Node::Bool(true), Node::Null);
        let rows = [&t, &f, &f, &t, &f, &f, &f, &f, &t];
        assert_eq!(bits(&rows, |r| matches!(r, Node::Bool(_))), vec![0b0000_1001, 0b1]);
    }
}
