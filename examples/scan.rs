//! Range iteration: Rust iterators over key ranges (both directions), and the seekable
//! cursor underneath them.
//!
//! ```sh
//! cargo run --example scan
//! ```

use leveltable::table::{BuildOptions, ReadOptions, Table, TableBuilder};

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap_or("<binary>")
}

fn main() -> Result<(), leveltable::table::Error> {
    // Orders of a few customers, keyed `customer/order`: a prefix groups one customer.
    let mut builder = TableBuilder::new(Vec::new(), BuildOptions::default().block_size(256))?;
    for customer in ["alice", "bob", "carol", "dave"] {
        for order in 1..=20 {
            let key = format!("{customer}/{order:04}");
            builder.add(key.as_bytes(), format!("{} items", order * 3).as_bytes())?;
        }
    }
    builder.finish()?;
    let table = Table::open(builder.into_inner(), ReadOptions::default())?;

    // Every order of bob: the keys from "bob/" up to, not including, "bob0" ('0' follows '/').
    let bob: Vec<_> = table.range("bob/".."bob0").collect::<Result<_, _>>()?;
    println!("bob has {} orders", bob.len());

    // Ranges are double-ended: carol's last three orders, newest first.
    for entry in table.range("carol/".."carol0").rev().take(3) {
        let (key, value) = entry?;
        println!("  {}\t{}", text(&key), text(&value));
    }

    // The cursor: seek to the first key at or after a target, then step either way.
    let mut it = table.iter();
    it.seek(b"bob/0015x");
    println!("first key at or after bob/0015x: {}", text(it.key()));
    it.next();
    println!("  next: {}", text(it.key()));
    it.prev();
    it.prev();
    println!("  two back: {}", text(it.key()));
    it.seek(b"zed");
    assert!(!it.valid(), "no key sorts after zed");
    it.status()?;

    // Whole-table scans, forward and backward.
    let total = table.entries().count();
    let last = table.entries().next_back().transpose()?;
    println!(
        "{total} entries; the last is {}",
        last.map_or("-".into(), |(k, _)| text(&k).to_owned())
    );
    Ok(())
}
