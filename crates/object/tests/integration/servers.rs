//! Tables read through real servers (moto speaking S3, nginx serving plain HTTP with range
//! requests) give the local reader's answers, in the request counts promised: open at most
//! 2, a get at most 1, a filtered-out get 0, batched gets and scans in coalesced requests.

use crate::common;

use std::ops::Bound;

use common::servers::{Moto, Nginx};
use common::tables::{self, SHAPES};
use leveltable_object::{
    AsyncTable, BlockingTable, Error, Location, ObjectReadOptions, ObjectTableBuilder,
};
use leveltable_table::{ReadOptions, Table};

/// Every entry of a local table, in order.
fn local_entries(t: &Table<Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = t.iter();
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

/// Reads the table at `loc` every way and compares with the local reader of `bytes`,
/// asserting request counts.
///
/// A table whose keys do not sort bytewise (LevelDB's internal keys, read here with the
/// bytewise comparator) is compared by its scans only: a point lookup in it has no defined
/// answer.
fn check_table(what: &str, loc: &Location, bytes: &[u8], ro: ReadOptions, filtered: bool) {
    let bytewise_sorted = what != "db_internal.ldb";
    let local = Table::open(bytes.to_vec(), ro.clone()).unwrap();
    let entries = local_entries(&local);
    let options = ObjectReadOptions::default().read(ro);
    let stats = loc.stats();

    let s0 = stats.snapshot();
    let t = BlockingTable::open(loc, options.clone()).unwrap();
    let opened = stats.snapshot() - s0;
    println!(
        "{what} ({} bytes): open {} requests, {} bytes",
        bytes.len(),
        opened.gets,
        opened.bytes_read
    );
    assert!(
        opened.gets <= 2,
        "{what}: open took {} requests",
        opened.gets
    );
    if bytes.len() as u64 <= options.tail_len {
        assert_eq!(
            opened.gets, 1,
            "{what}: a table inside the tail opens in one request"
        );
    }
    assert_eq!(t.table().properties(), local.properties(), "{what}");

    let step = (entries.len() / 200).max(1);
    if bytewise_sorted {
        check_gets(what, &t, &local, &entries, step, filtered);
    }
    check_scans(what, &t, &local, &entries, &options);
    if !bytewise_sorted {
        return;
    }

    // The async reader, gets running concurrently.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let t = AsyncTable::open(loc, options.clone()).await.unwrap();
        let keys: Vec<&Vec<u8>> = entries.iter().step_by(step * 7).map(|(k, _)| k).collect();
        let answers = futures::future::join_all(keys.iter().map(|k| t.get(k))).await;
        for (k, a) in keys.iter().zip(answers) {
            assert_eq!(a.unwrap(), local.get(k).unwrap(), "{what}");
        }
    });
}

/// Gets of present keys (a sample) and of absent ones, one by one and batched.
fn check_gets(
    what: &str,
    t: &BlockingTable,
    local: &Table<Vec<u8>>,
    entries: &[(Vec<u8>, Vec<u8>)],
    step: usize,
    filtered: bool,
) {
    let stats = t.as_async().stats();
    let mut absent_free = 0;
    let mut absent = 0;
    for (k, v) in entries.iter().step_by(step) {
        let before = stats.snapshot();
        assert_eq!(t.get(k).unwrap().as_deref(), Some(&v[..]), "{what}");
        let d = stats.snapshot() - before;
        assert!(d.gets <= 1, "{what}: a get took {} requests", d.gets);
        let mut missing = k.clone();
        missing.push(0);
        let before = stats.snapshot();
        assert_eq!(
            t.get(&missing).unwrap(),
            local.get(&missing).unwrap(),
            "{what}"
        );
        let d = stats.snapshot() - before;
        assert!(d.gets <= 1, "{what}");
        absent += 1;
        if d.gets == 0 {
            absent_free += 1;
        }
    }
    let before = stats.snapshot();
    assert_eq!(t.get(b"\xff\xff\xff past the end").unwrap(), None);
    assert_eq!(
        (stats.snapshot() - before).gets,
        0,
        "{what}: a key past the end costs nothing"
    );
    println!("{what}: {absent_free} of {absent} absent-key gets cost no request");
    if filtered {
        assert!(
            absent_free * 10 >= absent * 9,
            "{what}: only {absent_free} of {absent} absent keys were ruled out by the filter"
        );
    }

    // A batch of neighbouring keys: one request per run of blocks (here: 1).
    let batch: Vec<Vec<u8>> = entries
        .iter()
        .skip(entries.len() / 3)
        .take(300)
        .map(|(k, _)| k.clone())
        .collect();
    let before = stats.snapshot();
    let got = t.get_many(&batch).unwrap();
    let d = stats.snapshot() - before;
    let want: Vec<Option<Vec<u8>>> = batch.iter().map(|k| local.get(k).unwrap()).collect();
    assert_eq!(got, want, "{what}");
    println!(
        "{what}: batch of {} neighbours, {} requests",
        batch.len(),
        d.gets
    );
    assert!(
        d.gets <= 1,
        "{what}: a batch of neighbours took {} requests",
        d.gets
    );
    // A scattered batch, with absent keys, in random order.
    let mut scattered: Vec<Vec<u8>> = entries
        .iter()
        .step_by(step * 3)
        .map(|(k, _)| k.clone())
        .collect();
    scattered.extend(
        entries
            .iter()
            .step_by(step * 5)
            .map(|(k, _)| [k.as_slice(), b"~"].concat()),
    );
    scattered.reverse();
    let want: Vec<Option<Vec<u8>>> = scattered.iter().map(|k| local.get(k).unwrap()).collect();
    assert_eq!(t.get_many(&scattered).unwrap(), want, "{what}");
}

/// Scans: all of it, and a middle range.
fn check_scans(
    what: &str,
    t: &BlockingTable,
    local: &Table<Vec<u8>>,
    entries: &[(Vec<u8>, Vec<u8>)],
    options: &ObjectReadOptions,
) {
    let stats = t.as_async().stats();

    // A full scan, in coalesced requests.
    let before = stats.snapshot();
    let all: Vec<_> = t
        .range(Bound::Unbounded, Bound::Unbounded)
        .collect::<Result<_, _>>()
        .unwrap();
    let d = stats.snapshot() - before;
    assert_eq!(all.len(), entries.len(), "{what}");
    assert!(all == entries, "{what}: scan differs");
    let data = local.properties().data_size;
    println!(
        "{what}: full scan {} requests for {data} bytes of blocks",
        d.gets
    );
    let most = data.div_ceil(options.max_request) + 2;
    assert!(
        d.gets <= most,
        "{what}: scan of {data} bytes took {} requests",
        d.gets
    );
    // A middle range, both bound kinds.
    if entries.len() > 10 {
        let (lo, hi) = (&entries[entries.len() / 4].0, &entries[entries.len() / 2].0);
        let part: Vec<_> = t
            .range(Bound::Excluded(lo.clone()), Bound::Included(hi.clone()))
            .collect::<Result<_, _>>()
            .unwrap();
        let want: Vec<_> = entries
            .iter()
            .filter(|(k, _)| k > lo && k <= hi)
            .cloned()
            .collect();
        assert!(part == want, "{what}: range differs");
    }
}

fn leveldb_read_options(name: &str) -> ReadOptions {
    let _ = name;
    ReadOptions::default()
        .verify_checksums(true)
        .known_filter_policies()
}

#[test]
fn moto_reads_match_the_local_reader() {
    let Some(moto) = Moto::start() else { return };
    for shape in SHAPES {
        let bytes = tables::build(shape);
        let loc = moto.location(&format!("tables/{}.ldb", shape.name));
        // Written through the multipart builder, read back byte for byte.
        let mut b = ObjectTableBuilder::new(&loc, tables::build_options(shape)).unwrap();
        for i in 0..shape.entries {
            b.add(&tables::key(i), &tables::value(i, shape.value_len))
                .unwrap();
        }
        b.finish().unwrap();
        check_table(
            shape.name,
            &loc,
            &bytes,
            tables::read_options(shape.filter),
            shape.filter,
        );
    }
    for (name, bytes) in tables::leveldb_tables() {
        let loc = moto.location(&format!("leveldb/{name}"));
        let mut w = leveltable_object::ObjectWriter::new(&loc);
        std::io::Write::write_all(&mut w, &bytes).unwrap();
        w.finish().unwrap();
        check_table(name, &loc, &bytes, leveldb_read_options(name), false);
    }
}

#[test]
fn nginx_reads_match_the_local_reader() {
    let Some(nginx) = Nginx::start() else { return };
    for shape in SHAPES {
        let bytes = tables::build(shape);
        let name = format!("{}.ldb", shape.name);
        nginx.put(&name, &bytes);
        check_table(
            shape.name,
            &nginx.location(&name),
            &bytes,
            tables::read_options(shape.filter),
            shape.filter,
        );
    }
    for (name, bytes) in tables::leveldb_tables() {
        nginx.put(name, &bytes);
        check_table(
            name,
            &nginx.location(name),
            &bytes,
            leveldb_read_options(name),
            false,
        );
    }
}

#[test]
fn a_replaced_object_fails_reads_instead_of_mixing_versions() {
    let Some(nginx) = Nginx::start() else { return };
    let Some(moto) = Moto::start() else { return };
    let shape = &SHAPES[1];
    let bytes = tables::build(shape);
    let mut other = tables::build(&SHAPES[2]);
    other.truncate(other.len());
    nginx.put("t.ldb", &bytes);
    let on_s3 = moto.location("t.ldb");
    let mut w = leveltable_object::ObjectWriter::new(&on_s3);
    std::io::Write::write_all(&mut w, &bytes).unwrap();
    w.finish().unwrap();
    // A short tail: the blocks read below are not among the bytes read at open.
    let options = ObjectReadOptions::default()
        .read(tables::read_options(true))
        .tail_len(4096);
    let via_nginx = BlockingTable::open(&nginx.location("t.ldb"), options.clone()).unwrap();
    let via_s3 = BlockingTable::open(&on_s3, options).unwrap();
    let k = tables::key(777);
    assert!(via_nginx.get(&k).unwrap().is_some());
    assert!(via_s3.get(&k).unwrap().is_some());
    // Replace both objects with another table.
    std::thread::sleep(std::time::Duration::from_millis(1100)); // a new mtime for nginx's ETag
    nginx.put("t.ldb", &other);
    let mut w = leveltable_object::ObjectWriter::new(&on_s3);
    std::io::Write::write_all(&mut w, &other).unwrap();
    w.finish().unwrap();
    for t in [&via_nginx, &via_s3] {
        let e = t.get(&tables::key(5000)).unwrap_err();
        assert!(e.is_replaced(), "{e}");
        assert!(e.to_string().contains("replaced"), "{e}");
        let e = t
            .range(Bound::Unbounded, Bound::Unbounded)
            .find_map(Result::err)
            .expect("a scan of a replaced object fails");
        assert!(e.is_replaced(), "{e}");
    }
}

#[test]
fn credentials_never_appear_in_errors() {
    let Some(moto) = Moto::start() else { return };
    // A bucket that does not exist, and an object that does not.
    let loc =
        Location::parse_with("s3://no-such-bucket/t.ldb", Moto::options(&moto.endpoint())).unwrap();
    let e = BlockingTable::open(&loc, ObjectReadOptions::default()).unwrap_err();
    let missing = moto.location("no/such/object.ldb");
    let e2 = BlockingTable::open(&missing, ObjectReadOptions::default()).unwrap_err();
    assert!(matches!(e2, Error::NotFound { .. }), "{e2}");
    for text in [
        e.to_string(),
        format!("{e:?}"),
        e2.to_string(),
        format!("{e2:?}"),
        format!("{loc:?}"),
    ] {
        assert!(!text.contains(common::servers::SECRET_KEY), "{text}");
        assert!(!text.contains(common::servers::ACCESS_KEY), "{text}");
    }
    // Credentials in a URL are refused, and the refusal does not show them.
    let url = format!(
        "http://user:{}@127.0.0.1:{}/x.ldb",
        common::servers::SECRET_KEY,
        moto.port
    );
    let e = Location::parse(&url).unwrap_err();
    for text in [e.to_string(), format!("{e:?}")] {
        assert!(text.contains("credentials in a URL are not used"), "{text}");
        assert!(!text.contains(common::servers::SECRET_KEY), "{text}");
    }
}
