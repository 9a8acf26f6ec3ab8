/* C ABI of the LevelDB 1.23 shim used by the leveltable-interop crate.
 *
 * Conventions:
 * - Functions that can fail return an lt_status code (LT_OK on success) and, on
 *   failure, store a malloc'd NUL-terminated message in *err (free it with
 *   lt_free). err may be NULL when the caller does not want the message.
 * - Byte results are returned as lt_bytes whose data was allocated by the shim;
 *   the caller releases them with lt_free.
 * - No function lets a C++ exception escape: allocation failures inside LevelDB
 *   are reported as LT_EXCEPTION.
 * - Inputs on which LevelDB 1.23 would trip one of its assertions (compiled into
 *   Debian's build) or reach undefined behaviour are refused with LT_REJECTED
 *   before LevelDB sees them.
 */
#ifndef LEVELTABLE_INTEROP_SHIM_H_
#define LEVELTABLE_INTEROP_SHIM_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum lt_status {
  LT_OK = 0,
  LT_NOT_FOUND = 1,
  LT_CORRUPTION = 2,
  LT_NOT_SUPPORTED = 3,
  LT_INVALID_ARGUMENT = 4,
  LT_IO_ERROR = 5,
  LT_EXCEPTION = 6,
  LT_REJECTED = 7
};

typedef struct lt_bytes {
  uint8_t* data;
  size_t len;
} lt_bytes;

/* Options shared by the table builder and the table reader. */
typedef struct lt_options {
  size_t block_size;
  int32_t block_restart_interval; /* >= 1 */
  int32_t compression;            /* 0 = none, 1 = snappy */
  int32_t bloom_bits_per_key;     /* 0 = no filter policy */
  int32_t comparator;             /* 0 = bytewise, 1 = internal key */
  int32_t paranoid_checks;        /* reader only: verify checksums at open */
} lt_options;

typedef struct lt_policy lt_policy;
typedef struct lt_filter_builder lt_filter_builder;
typedef struct lt_filter_reader lt_filter_reader;
typedef struct lt_table_builder lt_table_builder;
typedef struct lt_table lt_table;
typedef struct lt_iter lt_iter;

void lt_free(void* ptr);

/* util/hash.h and util/crc32c.h */
uint32_t lt_hash(const uint8_t* data, size_t len, uint32_t seed);
uint32_t lt_crc32c_extend(uint32_t crc, const uint8_t* data, size_t len);

/* leveldb::NewBloomFilterPolicy */
lt_policy* lt_bloom_new(int32_t bits_per_key);
void lt_policy_free(lt_policy* policy);
const char* lt_policy_name(const lt_policy* policy);
int lt_policy_create_filter(const lt_policy* policy, const uint8_t* const* keys,
                            const size_t* key_lens, size_t n,
                            const uint8_t* prefix, size_t prefix_len,
                            lt_bytes* out, char** err);
int lt_policy_key_may_match(const lt_policy* policy, const uint8_t* key,
                            size_t key_len, const uint8_t* filter,
                            size_t filter_len);

/* table/filter_block.h */
lt_filter_builder* lt_filter_builder_new(const lt_policy* policy);
void lt_filter_builder_free(lt_filter_builder* builder);
int lt_filter_builder_start_block(lt_filter_builder* builder,
                                  uint64_t block_offset, char** err);
int lt_filter_builder_add_key(lt_filter_builder* builder, const uint8_t* key,
                              size_t key_len, char** err);
int lt_filter_builder_finish(lt_filter_builder* builder, lt_bytes* out,
                             char** err);
lt_filter_reader* lt_filter_reader_new(const lt_policy* policy,
                                       const uint8_t* contents, size_t len);
void lt_filter_reader_free(lt_filter_reader* reader);
int lt_filter_reader_key_may_match(lt_filter_reader* reader,
                                   uint64_t block_offset, const uint8_t* key,
                                   size_t key_len);

/* leveldb::TableBuilder; path == NULL builds in memory. */
int lt_table_builder_new(const lt_options* options, const char* path,
                         lt_table_builder** out, char** err);
void lt_table_builder_free(lt_table_builder* builder);
int lt_table_builder_add(lt_table_builder* builder, const uint8_t* key,
                         size_t key_len, const uint8_t* value, size_t value_len,
                         char** err);
int lt_table_builder_flush(lt_table_builder* builder, char** err);
uint64_t lt_table_builder_num_entries(const lt_table_builder* builder);
uint64_t lt_table_builder_file_size(const lt_table_builder* builder);
/* Finishes the table; for an in-memory builder *out receives the file. */
int lt_table_builder_finish(lt_table_builder* builder, lt_bytes* out,
                            char** err);

/* leveldb::Table; path == NULL opens the len bytes at data (copied). */
int lt_table_open(const lt_options* options, const char* path,
                  const uint8_t* data, size_t len, lt_table** out, char** err);
void lt_table_free(lt_table* table);
uint64_t lt_table_block_reads(const lt_table* table);
int lt_table_approximate_offset_of(const lt_table* table, const uint8_t* key,
                                   size_t key_len, uint64_t* out, char** err);
/* Table::InternalGet: *found says whether the callback ran (with the first
 * entry at or after key in the candidate block); *block_read whether a data
 * block was read from the file, i.e. the filter did not rule the key out. */
int lt_table_internal_get(lt_table* table, int verify_checksums,
                          const uint8_t* key, size_t key_len, int* found,
                          lt_bytes* found_key, lt_bytes* found_value,
                          int* block_read, char** err);

lt_iter* lt_table_iter_new(const lt_table* table, int verify_checksums);
void lt_iter_free(lt_iter* iter);
int lt_iter_valid(const lt_iter* iter);
void lt_iter_seek_to_first(lt_iter* iter);
void lt_iter_seek_to_last(lt_iter* iter);
int lt_iter_seek(lt_iter* iter, const uint8_t* key, size_t key_len,
                 char** err);
void lt_iter_next(lt_iter* iter);
void lt_iter_prev(lt_iter* iter);
/* Borrowed views, valid until the iterator moves or is freed. */
const uint8_t* lt_iter_key(const lt_iter* iter, size_t* len);
const uint8_t* lt_iter_value(const lt_iter* iter, size_t* len);
int lt_iter_status(const lt_iter* iter, char** err);

/* table/format.h ReadBlock on the file image at data. */
int lt_read_block(const uint8_t* data, size_t len, uint64_t offset,
                  uint64_t size, int verify_checksums, lt_bytes* out,
                  char** err);

#ifdef __cplusplus
}
#endif

#endif /* LEVELTABLE_INTEROP_SHIM_H_ */
