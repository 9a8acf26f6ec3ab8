//! The C ABI of `native/leveldb_loops.cc`, which the parent module wraps safely.

use core::ffi::{c_char, c_int};

#[repr(C)]
pub struct Policy {
    _private: [u8; 0],
}
#[repr(C)]
pub struct Builder {
    _private: [u8; 0],
}
#[repr(C)]
pub struct Table {
    _private: [u8; 0],
}
#[repr(C)]
pub struct Db {
    _private: [u8; 0],
}
#[repr(C)]
pub struct WriteDb {
    _private: [u8; 0],
}

unsafe extern "C" {
    pub fn ltb_free(p: *mut core::ffi::c_void);
    pub fn ltb_hash_slices(data: *const u8, len: usize, slice: usize, seed: u32) -> u32;
    pub fn ltb_bloom_new(bits_per_key: c_int) -> *mut Policy;
    pub fn ltb_bloom_free(p: *mut Policy);
    pub fn ltb_bloom_create_batches(
        p: *const Policy,
        keys: *const u8,
        key_len: usize,
        n: usize,
        batch: usize,
    ) -> usize;
    pub fn ltb_bloom_create(
        p: *const Policy,
        keys: *const u8,
        key_len: usize,
        n: usize,
        out_len: *mut usize,
    ) -> *mut u8;
    pub fn ltb_bloom_match(
        p: *const Policy,
        filter: *const u8,
        filter_len: usize,
        queries: *const u8,
        key_len: usize,
        n: usize,
    ) -> usize;
    pub fn ltb_filter_block_build(
        p: *const Policy,
        keys: *const u8,
        key_len: usize,
        offsets: *const u64,
        starts: *const usize,
        blocks: usize,
    ) -> usize;
    pub fn ltb_filter_block_match(
        p: *const Policy,
        block: *const u8,
        block_len: usize,
        queries: *const u8,
        key_len: usize,
        offsets: *const u64,
        n: usize,
    ) -> usize;
    pub fn ltb_builder_new(
        path: *const c_char,
        snappy: c_int,
        bloom_bits: c_int,
        out: *mut *mut Builder,
        err: *mut *mut c_char,
    ) -> c_int;
    pub fn ltb_builder_add(
        b: *mut Builder,
        keys: *const u8,
        key_len: usize,
        values: *const u8,
        value_len: usize,
        n: usize,
        err: *mut *mut c_char,
    ) -> c_int;
    pub fn ltb_builder_finish(b: *mut Builder, file_size: *mut u64, err: *mut *mut c_char)
    -> c_int;
    pub fn ltb_builder_free(b: *mut Builder);
    pub fn ltb_table_open(
        path: *const c_char,
        bloom_bits: c_int,
        cache_bytes: usize,
        out: *mut *mut Table,
        err: *mut *mut c_char,
    ) -> c_int;
    pub fn ltb_table_free(t: *mut Table);
    pub fn ltb_table_gets(
        t: *mut Table,
        queries: *const u8,
        key_len: usize,
        n: usize,
        verify_checksums: c_int,
        found: *mut u64,
        value_bytes: *mut u64,
        err: *mut *mut c_char,
    ) -> c_int;
    pub fn ltb_table_scan(
        t: *mut Table,
        verify_checksums: c_int,
        entries: *mut u64,
        bytes: *mut u64,
        err: *mut *mut c_char,
    ) -> c_int;
    pub fn ltb_db_open(
        path: *const c_char,
        bloom_bits: c_int,
        cache_bytes: usize,
        verify: c_int,
        create: c_int,
        out: *mut *mut Db,
        err: *mut *mut c_char,
    ) -> c_int;
    pub fn ltb_db_free(d: *mut Db);
    pub fn ltb_db_write(
        d: *mut Db,
        keys: *const u8,
        key_len: usize,
        values: *const u8,
        value_len: usize,
        n: usize,
        batch: usize,
        err: *mut *mut c_char,
    ) -> c_int;
    pub fn ltb_db_settle(
        d: *mut Db,
        timeout_ms: u64,
        files: *mut u64,
        err: *mut *mut c_char,
    ) -> c_int;
    pub fn ltb_db_compact_all(d: *mut Db, err: *mut *mut c_char) -> c_int;
    pub fn ltb_db_gets(
        d: *mut Db,
        queries: *const u8,
        key_len: usize,
        n: usize,
        found: *mut u64,
        value_bytes: *mut u64,
        err: *mut *mut c_char,
    ) -> c_int;
    pub fn ltb_db_scan(
        d: *mut Db,
        entries: *mut u64,
        bytes: *mut u64,
        err: *mut *mut c_char,
    ) -> c_int;
    pub fn ltb_table_gets_threads(
        t: *mut Table,
        queries: *const u8,
        key_len: usize,
        n: usize,
        threads: usize,
        found: *mut u64,
        value_bytes: *mut u64,
        err: *mut *mut c_char,
    ) -> c_int;
    pub fn ltb_table_scan_threads(
        t: *mut Table,
        threads: usize,
        entries: *mut u64,
        bytes: *mut u64,
        err: *mut *mut c_char,
    ) -> c_int;
    pub fn ltb_cli_get(path: *const c_char, err: *mut *mut c_char) -> c_int;
    pub fn ltb_cli_build(path: *const c_char, err: *mut *mut c_char) -> c_int;
    pub fn ltb_cli_db_write(
        dir: *const c_char,
        batch: c_int,
        sync: c_int,
        err: *mut *mut c_char,
    ) -> c_int;
    pub fn ltb_wdb_open(
        path: *const c_char,
        out: *mut *mut WriteDb,
        err: *mut *mut c_char,
    ) -> c_int;
    pub fn ltb_wdb_free(d: *mut WriteDb);
    pub fn ltb_wdb_put(
        d: *mut WriteDb,
        keys: *const u8,
        key_len: usize,
        n: usize,
        ring: *const u8,
        value_len: usize,
        ring_values: usize,
        first: u64,
        sync: c_int,
        err: *mut *mut c_char,
    ) -> c_int;
    pub fn ltb_wdb_delete(
        d: *mut WriteDb,
        keys: *const u8,
        key_len: usize,
        n: usize,
        sync: c_int,
        err: *mut *mut c_char,
    ) -> c_int;
    pub fn ltb_wdb_gets(
        d: *mut WriteDb,
        keys: *const u8,
        key_len: usize,
        n: usize,
        found: *mut u64,
        value_bytes: *mut u64,
        err: *mut *mut c_char,
    ) -> c_int;
    pub fn ltb_wdb_scan(
        d: *mut WriteDb,
        entries: *mut u64,
        bytes: *mut u64,
        err: *mut *mut c_char,
    ) -> c_int;
    pub fn ltb_wdb_settle(d: *mut WriteDb, timeout_ms: u64, err: *mut *mut c_char) -> c_int;
}
