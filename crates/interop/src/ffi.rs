//! Raw declarations of the shim (`shim/shim.h`) and of LevelDB's C API (`leveldb/c.h`).
//!
//! Without LevelDB the same names exist as functions that panic, so the safe wrappers compile
//! everywhere; they are only reached after [`available`](crate::available) said `true`, which
//! the wrappers check first through [`ensure_available`].

#![expect(unsafe_code, reason = "declares the foreign functions")]

use core::ffi::{c_char, c_int, c_uchar, c_void};

/// `lt_status` codes.
pub(crate) const LT_OK: c_int = 0;
pub(crate) const LT_NOT_FOUND: c_int = 1;
pub(crate) const LT_CORRUPTION: c_int = 2;
pub(crate) const LT_NOT_SUPPORTED: c_int = 3;
pub(crate) const LT_INVALID_ARGUMENT: c_int = 4;
pub(crate) const LT_IO_ERROR: c_int = 5;
pub(crate) const LT_EXCEPTION: c_int = 6;
pub(crate) const LT_REJECTED: c_int = 7;

/// A byte buffer allocated by the shim; released with `lt_free`.
#[repr(C)]
pub(crate) struct LtBytes {
    pub(crate) data: *mut u8,
    pub(crate) len: usize,
}

impl LtBytes {
    pub(crate) const fn empty() -> Self {
        LtBytes {
            data: core::ptr::null_mut(),
            len: 0,
        }
    }
}

/// `lt_options`.
#[repr(C)]
pub(crate) struct LtOptions {
    pub(crate) block_size: usize,
    pub(crate) block_restart_interval: i32,
    pub(crate) compression: i32,
    pub(crate) bloom_bits_per_key: i32,
    pub(crate) comparator: i32,
    pub(crate) paranoid_checks: i32,
}

/// Opaque shim and LevelDB C API handles.
macro_rules! opaque {
    ($($name:ident),* $(,)?) => {
        $(
            #[repr(C)]
            pub(crate) struct $name {
                _private: [u8; 0],
            }
        )*
    };
}

opaque!(
    LtPolicy,
    LtFilterBuilder,
    LtFilterReader,
    LtTableBuilder,
    LtTable,
    LtIter,
    LevelDbT,
    LevelDbOptionsT,
    LevelDbReadOptionsT,
    LevelDbWriteOptionsT,
    LevelDbFilterPolicyT,
);

/// Declares foreign functions when the shim is linked, panicking stand-ins otherwise.
macro_rules! foreign {
    ($( fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?; )*) => {
        #[cfg(leveldb_available)]
        unsafe extern "C" {
            $( pub(crate) fn $name($($arg: $ty),*) $(-> $ret)?; )*
        }

        $(
            #[cfg(not(leveldb_available))]
            #[allow(
                clippy::missing_safety_doc,
                clippy::too_many_arguments,
                reason = "stands in for a foreign function; it only panics"
            )]
            pub(crate) unsafe fn $name($(_: $ty),*) $(-> $ret)? {
                missing()
            }
        )*
    };
}

#[cfg(not(leveldb_available))]
#[cold]
fn missing() -> ! {
    panic!("{}", crate::SKIP_MESSAGE)
}

/// Panics with the skip message unless the shim is linked. Every safe wrapper that reaches
/// the foreign functions calls this first.
pub(crate) fn ensure_available() {
    assert!(crate::available(), "{}", crate::SKIP_MESSAGE);
}

foreign! {
    fn lt_free(ptr: *mut c_void);

    fn lt_hash(data: *const u8, len: usize, seed: u32) -> u32;
    fn lt_crc32c_extend(crc: u32, data: *const u8, len: usize) -> u32;

    fn lt_bloom_new(bits_per_key: i32) -> *mut LtPolicy;
    fn lt_policy_free(policy: *mut LtPolicy);
    fn lt_policy_name(policy: *const LtPolicy) -> *const c_char;
    fn lt_policy_create_filter(
        policy: *const LtPolicy,
        keys: *const *const u8,
        key_lens: *const usize,
        n: usize,
        prefix: *const u8,
        prefix_len: usize,
        out: *mut LtBytes,
        err: *mut *mut c_char,
    ) -> c_int;
    fn lt_policy_key_may_match(
        policy: *const LtPolicy,
        key: *const u8,
        key_len: usize,
        filter: *const u8,
        filter_len: usize,
    ) -> c_int;

    fn lt_filter_builder_new(policy: *const LtPolicy) -> *mut LtFilterBuilder;
    fn lt_filter_builder_free(builder: *mut LtFilterBuilder);
    fn lt_filter_builder_start_block(
        builder: *mut LtFilterBuilder,
        block_offset: u64,
        err: *mut *mut c_char,
    ) -> c_int;
    fn lt_filter_builder_add_key(
        builder: *mut LtFilterBuilder,
        key: *const u8,
        key_len: usize,
        err: *mut *mut c_char,
    ) -> c_int;
    fn lt_filter_builder_finish(
        builder: *mut LtFilterBuilder,
        out: *mut LtBytes,
        err: *mut *mut c_char,
    ) -> c_int;
    fn lt_filter_reader_new(
        policy: *const LtPolicy,
        contents: *const u8,
        len: usize,
    ) -> *mut LtFilterReader;
    fn lt_filter_reader_free(reader: *mut LtFilterReader);
    fn lt_filter_reader_key_may_match(
        reader: *mut LtFilterReader,
        block_offset: u64,
        key: *const u8,
        key_len: usize,
    ) -> c_int;

    fn lt_table_builder_new(
        options: *const LtOptions,
        path: *const c_char,
        out: *mut *mut LtTableBuilder,
        err: *mut *mut c_char,
    ) -> c_int;
    fn lt_table_builder_free(builder: *mut LtTableBuilder);
    fn lt_table_builder_add(
        builder: *mut LtTableBuilder,
        key: *const u8,
        key_len: usize,
        value: *const u8,
        value_len: usize,
        err: *mut *mut c_char,
    ) -> c_int;
    fn lt_table_builder_flush(builder: *mut LtTableBuilder, err: *mut *mut c_char) -> c_int;
    fn lt_table_builder_num_entries(builder: *const LtTableBuilder) -> u64;
    fn lt_table_builder_file_size(builder: *const LtTableBuilder) -> u64;
    fn lt_table_builder_finish(
        builder: *mut LtTableBuilder,
        out: *mut LtBytes,
        err: *mut *mut c_char,
    ) -> c_int;

    fn lt_table_open(
        options: *const LtOptions,
        path: *const c_char,
        data: *const u8,
        len: usize,
        out: *mut *mut LtTable,
        err: *mut *mut c_char,
    ) -> c_int;
    fn lt_table_free(table: *mut LtTable);
    fn lt_table_block_reads(table: *const LtTable) -> u64;
    fn lt_table_approximate_offset_of(
        table: *const LtTable,
        key: *const u8,
        key_len: usize,
        out: *mut u64,
        err: *mut *mut c_char,
    ) -> c_int;
    fn lt_table_internal_get(
        table: *mut LtTable,
        verify_checksums: c_int,
        key: *const u8,
        key_len: usize,
        found: *mut c_int,
        found_key: *mut LtBytes,
        found_value: *mut LtBytes,
        block_read: *mut c_int,
        err: *mut *mut c_char,
    ) -> c_int;

    fn lt_table_iter_new(table: *const LtTable, verify_checksums: c_int) -> *mut LtIter;
    fn lt_iter_free(iter: *mut LtIter);
    fn lt_iter_valid(iter: *const LtIter) -> c_int;
    fn lt_iter_seek_to_first(iter: *mut LtIter);
    fn lt_iter_seek_to_last(iter: *mut LtIter);
    fn lt_iter_seek(iter: *mut LtIter, key: *const u8, key_len: usize, err: *mut *mut c_char)
        -> c_int;
    fn lt_iter_next(iter: *mut LtIter);
    fn lt_iter_prev(iter: *mut LtIter);
    fn lt_iter_key(iter: *const LtIter, len: *mut usize) -> *const u8;
    fn lt_iter_value(iter: *const LtIter, len: *mut usize) -> *const u8;
    fn lt_iter_status(iter: *const LtIter, err: *mut *mut c_char) -> c_int;

    fn lt_read_block(
        data: *const u8,
        len: usize,
        offset: u64,
        size: u64,
        verify_checksums: c_int,
        out: *mut LtBytes,
        err: *mut *mut c_char,
    ) -> c_int;

    fn leveldb_open(
        options: *const LevelDbOptionsT,
        name: *const c_char,
        errptr: *mut *mut c_char,
    ) -> *mut LevelDbT;
    fn leveldb_close(db: *mut LevelDbT);
    fn leveldb_put(
        db: *mut LevelDbT,
        options: *const LevelDbWriteOptionsT,
        key: *const c_char,
        keylen: usize,
        val: *const c_char,
        vallen: usize,
        errptr: *mut *mut c_char,
    );
    fn leveldb_delete(
        db: *mut LevelDbT,
        options: *const LevelDbWriteOptionsT,
        key: *const c_char,
        keylen: usize,
        errptr: *mut *mut c_char,
    );
    fn leveldb_get(
        db: *mut LevelDbT,
        options: *const LevelDbReadOptionsT,
        key: *const c_char,
        keylen: usize,
        vallen: *mut usize,
        errptr: *mut *mut c_char,
    ) -> *mut c_char;
    fn leveldb_compact_range(
        db: *mut LevelDbT,
        start_key: *const c_char,
        start_key_len: usize,
        limit_key: *const c_char,
        limit_key_len: usize,
    );
    fn leveldb_property_value(db: *mut LevelDbT, propname: *const c_char) -> *mut c_char;
    fn leveldb_free(ptr: *mut c_void);
    fn leveldb_major_version() -> c_int;
    fn leveldb_minor_version() -> c_int;

    fn leveldb_options_create() -> *mut LevelDbOptionsT;
    fn leveldb_options_destroy(options: *mut LevelDbOptionsT);
    fn leveldb_options_set_create_if_missing(options: *mut LevelDbOptionsT, v: c_uchar);
    fn leveldb_options_set_error_if_exists(options: *mut LevelDbOptionsT, v: c_uchar);
    fn leveldb_options_set_paranoid_checks(options: *mut LevelDbOptionsT, v: c_uchar);
    fn leveldb_options_set_write_buffer_size(options: *mut LevelDbOptionsT, size: usize);
    fn leveldb_options_set_block_size(options: *mut LevelDbOptionsT, size: usize);
    fn leveldb_options_set_block_restart_interval(options: *mut LevelDbOptionsT, n: c_int);
    fn leveldb_options_set_max_file_size(options: *mut LevelDbOptionsT, size: usize);
    fn leveldb_options_set_compression(options: *mut LevelDbOptionsT, level: c_int);
    fn leveldb_options_set_filter_policy(
        options: *mut LevelDbOptionsT,
        policy: *mut LevelDbFilterPolicyT,
    );
    fn leveldb_filterpolicy_create_bloom(bits_per_key: c_int) -> *mut LevelDbFilterPolicyT;
    fn leveldb_filterpolicy_destroy(policy: *mut LevelDbFilterPolicyT);
    fn leveldb_readoptions_create() -> *mut LevelDbReadOptionsT;
    fn leveldb_readoptions_destroy(options: *mut LevelDbReadOptionsT);
    fn leveldb_readoptions_set_verify_checksums(options: *mut LevelDbReadOptionsT, v: c_uchar);
    fn leveldb_writeoptions_create() -> *mut LevelDbWriteOptionsT;
    fn leveldb_writeoptions_destroy(options: *mut LevelDbWriteOptionsT);
    fn leveldb_writeoptions_set_sync(options: *mut LevelDbWriteOptionsT, v: c_uchar);
}

opaque!(LevelDbWriteBatchT, LevelDbSnapshotT, LevelDbIteratorT,);

foreign! {
    fn leveldb_write(
        db: *mut LevelDbT,
        options: *const LevelDbWriteOptionsT,
        batch: *mut LevelDbWriteBatchT,
        errptr: *mut *mut c_char,
    );
    fn leveldb_writebatch_create() -> *mut LevelDbWriteBatchT;
    fn leveldb_writebatch_destroy(batch: *mut LevelDbWriteBatchT);
    fn leveldb_writebatch_put(
        batch: *mut LevelDbWriteBatchT,
        key: *const c_char,
        klen: usize,
        val: *const c_char,
        vlen: usize,
    );
    fn leveldb_writebatch_delete(batch: *mut LevelDbWriteBatchT, key: *const c_char, klen: usize);
    fn leveldb_create_snapshot(db: *mut LevelDbT) -> *const LevelDbSnapshotT;
    fn leveldb_release_snapshot(db: *mut LevelDbT, snapshot: *const LevelDbSnapshotT);
    fn leveldb_readoptions_set_snapshot(
        options: *mut LevelDbReadOptionsT,
        snapshot: *const LevelDbSnapshotT,
    );
    fn leveldb_create_iterator(
        db: *mut LevelDbT,
        options: *const LevelDbReadOptionsT,
    ) -> *mut LevelDbIteratorT;
    fn leveldb_iter_destroy(iter: *mut LevelDbIteratorT);
    fn leveldb_iter_valid(iter: *const LevelDbIteratorT) -> c_uchar;
    fn leveldb_iter_seek_to_first(iter: *mut LevelDbIteratorT);
    fn leveldb_iter_seek_to_last(iter: *mut LevelDbIteratorT);
    fn leveldb_iter_next(iter: *mut LevelDbIteratorT);
    fn leveldb_iter_prev(iter: *mut LevelDbIteratorT);
    fn leveldb_iter_key(iter: *const LevelDbIteratorT, klen: *mut usize) -> *const c_char;
    fn leveldb_iter_value(iter: *const LevelDbIteratorT, vlen: *mut usize) -> *const c_char;
    fn leveldb_iter_get_error(iter: *const LevelDbIteratorT, errptr: *mut *mut c_char);
    fn leveldb_repair_db(
        options: *const LevelDbOptionsT,
        name: *const c_char,
        errptr: *mut *mut c_char,
    );
}

foreign! {
    fn leveldb_approximate_sizes(
        db: *mut LevelDbT,
        num_ranges: c_int,
        range_start_key: *const *const c_char,
        range_start_key_len: *const usize,
        range_limit_key: *const *const c_char,
        range_limit_key_len: *const usize,
        sizes: *mut u64,
    );
}
