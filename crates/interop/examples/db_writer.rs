//! Writes a random history to a LevelDB database, printing the operation count after each
//! write, so a test can kill it at a random point: `db_writer <dir> <seed> <writes>`.

use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: db_writer <dir> <seed> <writes>";
    let dir = PathBuf::from(args.next().expect(usage));
    let seed = args.next().and_then(|s| s.parse().ok()).expect(usage);
    let writes = args.next().and_then(|s| s.parse().ok()).expect(usage);
    if !leveltable_interop::require_leveldb() {
        return;
    }
    if let Err(e) = leveltable_interop::db::random_writer(&dir, seed, writes) {
        eprintln!("db_writer: {e}");
        std::process::exit(1);
    }
}
