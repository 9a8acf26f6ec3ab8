//! The tree a deserialization builds before it becomes JSON.
//!
//! Objects a value reaches more than once (V8's back-references) are shared, not copied, while
//! decoding; [`Node::to_json`] writes a copy at each place, counting every JSON node it writes
//! against a budget so that a small input whose references fan out cannot grow into a huge
//! output (a leaf counts as many values as it has bytes or items). A reference to an object
//! still being decoded (a cycle) becomes
//! `{"type":"cycle","id":n}`, with `n` the object's V8 id.

use std::rc::Rc;

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// A decoded value.
#[derive(Debug)]
pub(crate) enum Node {
    /// Already JSON.
    Leaf(Value),
    /// A JSON array.
    Array(Vec<Rc<Node>>),
    /// A JS object's properties, in order. Written as a JSON object; an object with a property
    /// named `type` is wrapped as `{"type":"object","value":{...}}` so that every JSON object
    /// with a `type` key is a tag.
    Object(Vec<(String, Rc<Node>)>),
    /// `{"type": tag, fields...}`.
    Tagged(&'static str, Vec<(&'static str, Rc<Node>)>),
    /// A reference to an object that encloses it.
    Cycle(u32),
}

impl Node {
    pub(crate) fn leaf(v: impl Into<Value>) -> Rc<Node> {
        Rc::new(Node::Leaf(v.into()))
    }

    /// Writes the JSON, failing once more than `budget` JSON values would be written.
    pub(crate) fn to_json(&self, budget: &mut usize) -> Result<Value> {
        let cost = match self {
            Node::Leaf(v) => 1 + leaf_size(v),
            _ => 1,
        };
        if *budget < cost {
            return Err(Error::invalid(
                "V8 value",
                0,
                "the value's references expand beyond the output limit",
            ));
        }
        *budget -= cost;
        Ok(match self {
            Node::Leaf(v) => v.clone(),
            Node::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|n| n.to_json(budget))
                    .collect::<Result<_>>()?,
            ),
            Node::Object(props) => {
                let mut m = Map::new();
                for (k, v) in props {
                    m.insert(k.clone(), v.to_json(budget)?);
                }
                if m.contains_key("type") {
                    let mut w = Map::new();
                    w.insert("type".into(), "object".into());
                    w.insert("value".into(), Value::Object(m));
                    Value::Object(w)
                } else {
                    Value::Object(m)
                }
            }
            Node::Tagged(tag, fields) => {
                let mut m = Map::new();
                m.insert("type".into(), (*tag).into());
                for (k, v) in fields {
                    m.insert((*k).into(), v.to_json(budget)?);
                }
                Value::Object(m)
            }
            Node::Cycle(id) => {
                let mut m = Map::new();
                m.insert("type".into(), "cycle".into());
                m.insert("id".into(), (*id).into());
                Value::Object(m)
            }
        })
    }
}

/// Roughly how many bytes a leaf's JSON takes (leaves nest at most two levels).
fn leaf_size(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(|x| 1 + leaf_size(x)).sum(),
        Value::Object(m) => m.iter().map(|(k, x)| k.len() + 1 + leaf_size(x)).sum(),
        _ => 8,
    }
}
