// Writes vectors.json: values serialized by V8's ValueSerializer (through Node.js's
// v8.Serializer, so typed arrays use V8's own tags), each with the JSON that
// leveltable-chromium's v8::deserialize_v8 must produce for it. The JSON is computed here,
// from the JavaScript value, by toJson below: an implementation of the crate's documented
// conventions independent of the Rust one.
//
//   node make_vectors.js > vectors.json
"use strict";
const v8 = require("v8");

function serialize(value) {
  const s = new v8.Serializer();
  s.writeHeader();
  s.writeValue(value);
  return s.releaseBuffer();
}

function num(n) {
  if (Number.isNaN(n)) return { type: "number", value: "NaN" };
  if (n === Infinity) return { type: "number", value: "Infinity" };
  if (n === -Infinity) return { type: "number", value: "-Infinity" };
  if (Object.is(n, -0)) return { type: "number", value: "-0" };
  return n;
}

function plainNum(n) {
  const j = num(n);
  return typeof j === "object" ? j.value : j;
}

function str(s) {
  const units = Array.from({ length: s.length }, (_, i) => s.charCodeAt(i));
  let lone = false;
  let lossy = "";
  for (let i = 0; i < s.length; i++) {
    const c = units[i];
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && units[i + 1] >= 0xdc00 && units[i + 1] <= 0xdfff) {
      lossy += s[i] + s[i + 1];
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      lone = true;
      lossy += "\ufffd";
    } else {
      lossy += s[i];
    }
  }
  return lone ? { type: "string", value: lossy, utf16: units } : s;
}

const b64 = (bytes) => Buffer.from(bytes).toString("base64");

function props(o, skipIndices) {
  const out = {};
  for (const k of Object.keys(o)) {
    if (skipIndices && String(k >>> 0) === k && (k >>> 0) < o.length) continue;
    out[k] = toJson(o[k]);
  }
  return out;
}

function object(m) {
  return "type" in m ? { type: "object", value: m } : m;
}

const viewNames = ["Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array",
  "Int32Array", "Uint32Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array"];

function toJson(v) {
  switch (typeof v) {
    case "undefined": return { type: "undefined" };
    case "boolean": return v;
    case "number": return num(v);
    case "bigint": return { type: "bigint", value: v.toString() };
    case "string": return str(v);
  }
  if (v === null) return null;
  if (Array.isArray(v)) {
    let holey = false;
    for (let i = 0; i < v.length; i++) if (!(i in v)) holey = true;
    if (holey) return { type: "sparse_array", length: v.length, properties: props(v, false) };
    const items = Array.from(v, toJson);
    const extra = props(v, true);
    return Object.keys(extra).length ? { type: "array", items, properties: extra } : items;
  }
  if (v instanceof Date) return { type: "date", value: plainNum(v.getTime()) };
  if (v instanceof RegExp) return { type: "regexp", source: str(v.source), flags: v.flags };
  if (v instanceof Map) return { type: "map", entries: Array.from(v, ([k, x]) => [toJson(k), toJson(x)]) };
  if (v instanceof Set) return { type: "set", values: Array.from(v, toJson) };
  if (v instanceof ArrayBuffer) {
    const out = { type: "ArrayBuffer", base64: b64(new Uint8Array(v)) };
    if (v.resizable) out.max_byte_length = v.maxByteLength;
    return out;
  }
  if (v instanceof DataView) {
    return { type: "DataView", byte_offset: v.byteOffset, byte_length: v.byteLength,
      base64: b64(new Uint8Array(v.buffer, v.byteOffset, v.byteLength)) };
  }
  if (ArrayBuffer.isView(v)) {
    const name = viewNames.find((n) => v instanceof globalThis[n]);
    const values = Array.from(v, (x) => (typeof x === "bigint" ? x.toString() : num(x)));
    return { type: name, byte_offset: v.byteOffset, byte_length: v.byteLength, values };
  }
  if (v instanceof Number) return { type: "Number", value: num(v.valueOf()) };
  if (v instanceof String) return { type: "String", value: str(v.valueOf()) };
  if (v instanceof Boolean) return { type: "Boolean", value: v.valueOf() };
  if (v instanceof BigInt) return { type: "BigInt", value: v.valueOf().toString() };
  if (v instanceof Error) {
    const known = ["EvalError", "RangeError", "ReferenceError", "SyntaxError", "TypeError", "URIError"];
    const proto = Object.getPrototypeOf(v);
    const name = known.find((n) => proto === globalThis[n].prototype) || "Error";
    const out = { type: "error", name };
    if (Object.prototype.hasOwnProperty.call(v, "message")) out.message = str(v.message);
    if (typeof v.stack === "string") out.stack = str(v.stack);
    if (Object.prototype.hasOwnProperty.call(v, "cause")) out.cause = toJson(v.cause);
    return out;
  }
  return object(props(v, false));
}

const shared = { s: [1, 2] };
const buffer = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]).buffer;
const withProps = [1, 2]; withProps.extra = "x";
const sparse = []; sparse[3] = "three"; sparse.big = true;
const errWithCause = new Error("outer", { cause: new TypeError("inner") });

const values = {
  undefined: undefined, null: null, true: true, false: false,
  int_small: 7, int_negative: -123456, int_max: 2147483647, int_min: -2147483648,
  uint: 4294967295, double: 3.141592653589793, nan: NaN, inf: Infinity, neg_inf: -Infinity,
  neg_zero: -0, tiny: 5e-324,
  bigint: 123456789012345678901234567890n, bigint_neg: -(2n ** 64n), bigint_zero: 0n,
  one_byte: "Latin-1 \u00e9\u00ff", two_byte: "\u65e5\u672c \ud83d\ude00", empty: "",
  lone_surrogate: "a\ud800b", long_string: "z".repeat(1000),
  object: { a: 1, b: "two", nested: { deeper: [true, null] }, 10: "ten", "-1": "minus" },
  object_with_type_key: { type: "not a tag", value: 1 },
  dense: [1, "a", { b: 2 }, [3]], dense_with_props: withProps,
  sparse, holey: [1, , 3], empty_array: [],
  date: new Date(1700000000123), invalid_date: new Date(NaN),
  regexp: /a+b?/gimsuy, regexp_unicode: /\u{1F600}/v, regexp_indices: /x/d,
  map: new Map([[1, "one"], ["two", 2], [{ k: 1 }, [null]]]),
  set: new Set([1, "1", 1n, null]),
  array_buffer: new Uint8Array([0, 1, 127, 128, 255]).buffer,
  resizable_buffer: new ArrayBuffer(4, { maxByteLength: 16 }),
  int8: new Int8Array([-128, 0, 127]), uint8: new Uint8Array([0, 255]),
  uint8_clamped: new Uint8ClampedArray([0, 300]), int16: new Int16Array([-32768, 32767]),
  uint16: new Uint16Array([65535]), int32: new Int32Array([-1, 2147483647]),
  uint32: new Uint32Array([4294967295]), float32: new Float32Array([1.5, -0, NaN]),
  float64: new Float64Array([Math.PI, Infinity]),
  bigint64: new BigInt64Array([-(2n ** 63n), 1n]), biguint64: new BigUint64Array([2n ** 64n - 1n]),
  view_of_part: new Uint16Array(buffer, 2, 2), data_view: new DataView(buffer, 1, 3),
  number_object: new Number(-1.5), string_object: new String("boxed"),
  boolean_object: new Boolean(true), bigint_object: Object(99n),
  error: new Error("plain"), range_error: new RangeError("range"), eval_error: new EvalError("e"),
  reference_error: new ReferenceError("r"), syntax_error: new SyntaxError("s"),
  uri_error: new URIError("u"), error_with_cause: errWithCause,
  shared_twice: { first: shared, second: shared, list: [shared, shared] },
  nested_deep: JSON.parse("[".repeat(50) + "1" + "]".repeat(50)),
};

const out = [];
for (const [name, value] of Object.entries(values)) {
  out.push({ name, hex: serialize(value).toString("hex"), json: toJson(value) });
}
// A cycle: the object's id is 0, the first object of the value.
const cyclic = { name: "self" };
cyclic.self = cyclic;
out.push({ name: "cycle", hex: serialize(cyclic).toString("hex"),
  json: { name: "self", self: { type: "cycle", id: 0 } } });

process.stdout.write(JSON.stringify({ node: process.version, v8: process.versions.v8, vectors: out }, null, 1) + "\n");
