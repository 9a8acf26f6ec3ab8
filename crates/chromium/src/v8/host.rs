//! Blink's host objects: what follows V8's `\` tag in values Chromium serializes
//! (`third_party/blink/renderer/bindings/core/v8/serialization/serialization_tag.h`).
//!
//! Stored values hold references to the record's blobs and files (`i`, `e`, `L`: an index
//! into the record's blob entry), older inline blobs and files (`b`, `f`, `l`), geometry
//! (`Q` `W` `E` `R` `T` `Y` `U` `I` `O`), `#` image data, `x` DOM exceptions, `K` crypto
//! keys. Anything else is an [`Error::UnknownTag`] naming the Blink tag.

use std::rc::Rc;

use serde_json::Value;

use super::deserializer::Deserializer;
use super::node::Node;
use crate::error::{Error, Result};
use crate::json;

type Fields = Vec<(&'static str, Rc<Node>)>;

impl Deserializer<'_> {
    /// The host object after a `\` tag.
    pub(crate) fn read_host_object(&mut self) -> Result<Rc<Node>> {
        let at = self.offset();
        let tag = self.byte("Blink host object tag")?;
        let (name, fields): (&'static str, Fields) = match tag {
            b'i' => (
                "blob",
                vec![("index", self.leaf_varint("Blink blob index")?)],
            ),
            b'e' => (
                "file",
                vec![("index", self.leaf_varint("Blink file index")?)],
            ),
            b'b' => ("blob", self.inline_blob()?),
            b'f' => ("file", self.inline_file()?),
            b'l' => {
                let count = self.varint32("Blink file list length")?;
                let mut files = Vec::new();
                for _ in 0..count {
                    files.push(Rc::new(Node::Tagged("file", self.inline_file()?)));
                }
                ("file_list", vec![("files", Rc::new(Node::Array(files)))])
            }
            b'L' => {
                let count = self.varint32("Blink file list length")?;
                let mut indexes = Vec::new();
                for _ in 0..count {
                    indexes.push(Value::from(self.varint32("Blink file index")?));
                }
                ("file_list", vec![("indexes", Node::leaf(indexes))])
            }
            b'Q' => ("DOMPoint", self.doubles(&["x", "y", "z", "w"])?),
            b'W' => ("DOMPointReadOnly", self.doubles(&["x", "y", "z", "w"])?),
            b'E' => ("DOMRect", self.doubles(&["x", "y", "width", "height"])?),
            b'R' => (
                "DOMRectReadOnly",
                self.doubles(&["x", "y", "width", "height"])?,
            ),
            b'T' => ("DOMQuad", self.matrix(16)?),
            b'Y' => ("DOMMatrix", self.matrix(16)?),
            b'U' => ("DOMMatrixReadOnly", self.matrix(16)?),
            b'I' => ("DOMMatrix", self.matrix(6)?),
            b'O' => ("DOMMatrixReadOnly", self.matrix(6)?),
            b'x' => (
                "DOMException",
                vec![
                    ("name", Node::leaf(self.utf8("DOMException name")?)),
                    ("message", Node::leaf(self.utf8("DOMException message")?)),
                    ("stack", Node::leaf(self.utf8("DOMException stack")?)),
                ],
            ),
            b'#' => ("ImageData", self.image_data()?),
            b'K' => ("CryptoKey", self.crypto_key()?),
            tag => {
                return Err(Error::UnknownTag {
                    what: "Blink host object tag",
                    tag,
                    offset: at,
                });
            }
        };
        Ok(Rc::new(Node::Tagged(name, fields)))
    }

    fn leaf_varint(&mut self, what: &'static str) -> Result<Rc<Node>> {
        Ok(Node::leaf(self.varint(what)?))
    }

    fn doubles(&mut self, names: &[&'static str]) -> Result<Fields> {
        let mut out = Vec::new();
        for name in names {
            out.push((
                *name,
                Node::leaf(json::number(self.double("Blink geometry")?)),
            ));
        }
        Ok(out)
    }

    fn matrix(&mut self, n: usize) -> Result<Fields> {
        let mut values = Vec::new();
        for _ in 0..n {
            values.push(json::number(self.double("Blink matrix")?));
        }
        Ok(vec![("values", Node::leaf(values))])
    }

    fn inline_blob(&mut self) -> Result<Fields> {
        Ok(vec![
            ("uuid", Node::leaf(self.utf8("Blink blob uuid")?)),
            ("mime_type", Node::leaf(self.utf8("Blink blob type")?)),
            ("size", self.leaf_varint("Blink blob size")?),
        ])
    }

    /// A file written inline (Blink's `ReadFile`), with its fields gated on Blink's version.
    fn inline_file(&mut self) -> Result<Fields> {
        let v = self.blink_version;
        let mut f = vec![("path", Node::leaf(self.utf8("Blink file path")?))];
        if v >= 4 {
            f.push(("name", Node::leaf(self.utf8("Blink file name")?)));
            f.push(("relative_path", Node::leaf(self.utf8("Blink file path")?)));
        }
        f.push(("uuid", Node::leaf(self.utf8("Blink file uuid")?)));
        f.push(("mime_type", Node::leaf(self.utf8("Blink file type")?)));
        if v >= 4 && self.varint32("Blink file snapshot flag")? != 0 {
            f.push(("size", self.leaf_varint("Blink file size")?));
            let mut modified = self.double("Blink file modification time")?;
            if v < 8 {
                modified *= 1000.0;
            }
            f.push(("last_modified_ms", Node::leaf(json::number(modified))));
        }
        if v >= 7 {
            let visible = self.varint32("Blink file visibility")? != 0;
            f.push(("user_visible", Node::leaf(visible)));
        }
        Ok(f)
    }

    fn image_data(&mut self) -> Result<Fields> {
        let mut f = Vec::new();
        if self.blink_version >= 18 {
            loop {
                let at = self.offset();
                match self.varint32("Blink image data parameter")? {
                    0 => break,
                    1 => f.push(("color_space", self.leaf_varint("Blink color space")?)),
                    3 => f.push(("pixel_format", self.leaf_varint("Blink pixel format")?)),
                    tag => {
                        return Err(Error::UnknownTag {
                            what: "Blink image data parameter",
                            tag: tag.min(255) as u8,
                            offset: at,
                        });
                    }
                }
            }
        }
        f.push(("width", self.leaf_varint("Blink image width")?));
        f.push(("height", self.leaf_varint("Blink image height")?));
        let len = self.varint("Blink image data length")?;
        let pixels = self.bytes(len, "Blink image data")?;
        f.push(("base64", Node::leaf(json::base64(pixels))));
        Ok(f)
    }

    /// A Web Crypto key: its kind and parameters, usages and key bytes, as Blink's modules
    /// serializer writes them.
    fn crypto_key(&mut self) -> Result<Fields> {
        let at = self.offset();
        let sub = self.byte("CryptoKey kind")?;
        let mut f: Fields = Vec::new();
        let num = |d: &mut Self, name: &'static str, f: &mut Fields| -> Result<()> {
            f.push((name, d.leaf_varint("CryptoKey parameter")?));
            Ok(())
        };
        let kind = match sub {
            1 => {
                num(self, "algorithm", &mut f)?;
                num(self, "length_bytes", &mut f)?;
                "aes"
            }
            2 => {
                num(self, "length_bytes", &mut f)?;
                num(self, "hash", &mut f)?;
                "hmac"
            }
            4 => {
                num(self, "algorithm", &mut f)?;
                num(self, "key_type", &mut f)?;
                num(self, "modulus_length_bits", &mut f)?;
                let len = self.varint("CryptoKey public exponent length")?;
                let exp = self.bytes(len, "CryptoKey public exponent")?;
                f.push(("public_exponent", Node::leaf(json::binary(exp))));
                num(self, "hash", &mut f)?;
                "rsa_hashed"
            }
            5 => {
                num(self, "algorithm", &mut f)?;
                num(self, "key_type", &mut f)?;
                num(self, "named_curve", &mut f)?;
                "ec"
            }
            6 => {
                num(self, "algorithm", &mut f)?;
                "no_params"
            }
            7..=9 => {
                num(self, "algorithm", &mut f)?;
                num(self, "key_type", &mut f)?;
                match sub {
                    7 => "ed25519",
                    8 => "x25519",
                    _ => "no_params_with_key_type",
                }
            }
            tag => {
                return Err(Error::UnknownTag {
                    what: "CryptoKey kind",
                    tag,
                    offset: at,
                });
            }
        };
        f.insert(0, ("kind", Node::leaf(kind)));
        num(self, "usages", &mut f)?;
        let len = self.varint("CryptoKey data length")?;
        let data = self.bytes(len, "CryptoKey data")?;
        f.push(("key_data", Node::leaf(json::binary(data))));
        Ok(f)
    }
}
