// Timed loops over LevelDB 1.23, for the comparison runner.
//
// Each function runs a whole workload inside C++ so that a measurement of
// LevelDB contains no per-operation crossing of the language boundary (the
// leveltable side runs its loop in Rust the same way). Keys and values come
// from buffers the caller owns: fixed-length records laid end to end.
//
// Besides the public headers this reaches three things Debian's static
// libleveldb.a exports without installing a header for: leveldb::Hash,
// the filter block classes, and the private Table::InternalGet (the lookup a
// database runs for every table it consults). The interop crate's
// leveldb_internal.h declares them, as LevelDB 1.23 lays them out.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "leveldb/cache.h"
#include "leveldb/comparator.h"
#include "leveldb/db.h"
#include "leveldb/env.h"
#include "leveldb/filter_policy.h"
#include "leveldb/iterator.h"
#include "leveldb/options.h"
#include "leveldb/slice.h"
#include "leveldb/status.h"
#include "leveldb/table.h"
#include "leveldb/table_builder.h"
#include "leveldb/write_batch.h"

#include "leveldb_internal.h"

namespace {

using leveldb::Slice;
using leveldb::Status;

char* CopyMessage(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p == nullptr) return nullptr;
  std::memcpy(p, s.data(), s.size() + 1);
  return p;
}

int Report(const Status& s, char** err) {
  if (s.ok()) return 0;
  if (err != nullptr) *err = CopyMessage(s.ToString());
  return 1;
}

Slice Record(const uint8_t* base, size_t len, size_t i) {
  return Slice(reinterpret_cast<const char*>(base) + i * len, len);
}

std::vector<Slice> Records(const uint8_t* base, size_t len, size_t n) {
  std::vector<Slice> out;
  out.reserve(n);
  for (size_t i = 0; i < n; i++) out.push_back(Record(base, len, i));
  return out;
}

// What a database's Get does with the entry InternalGet finds: compare the
// key and copy the value into the caller's string.
struct GetState {
  Slice key;
  bool found;
  std::string* value;
};

void SaveValue(void* arg, const Slice& k, const Slice& v) {
  GetState* s = static_cast<GetState*>(arg);
  if (k == s->key) {
    s->found = true;
    s->value->assign(v.data(), v.size());
  }
}

}  // namespace

struct ltb_policy {
  std::unique_ptr<const leveldb::FilterPolicy> policy;
};

struct ltb_builder {
  leveldb::Options options;
  std::unique_ptr<const leveldb::FilterPolicy> policy;
  std::unique_ptr<leveldb::WritableFile> file;
  std::unique_ptr<leveldb::TableBuilder> builder;
  bool finished = false;
};

struct ltb_table {
  leveldb::Options options;
  std::unique_ptr<const leveldb::FilterPolicy> policy;
  std::unique_ptr<leveldb::Cache> cache;
  std::unique_ptr<leveldb::RandomAccessFile> file;
  std::unique_ptr<leveldb::Table> table;
};

extern "C" {

void ltb_free(void* p) { std::free(p); }

uint32_t ltb_hash_slices(const uint8_t* data, size_t len, size_t slice,
                         uint32_t seed) {
  uint32_t acc = 0;
  for (size_t at = 0; at + slice <= len; at += slice) {
    acc ^= leveldb::Hash(reinterpret_cast<const char*>(data) + at, slice, seed);
  }
  return acc;
}

ltb_policy* ltb_bloom_new(int bits_per_key) {
  ltb_policy* p = new ltb_policy;
  p->policy.reset(leveldb::NewBloomFilterPolicy(bits_per_key));
  return p;
}

void ltb_bloom_free(ltb_policy* p) { delete p; }

// Creates one filter per `batch` consecutive keys (a smaller last batch),
// reusing one string as a table builder does; returns the total filter bytes.
size_t ltb_bloom_create_batches(const ltb_policy* p, const uint8_t* keys,
                                size_t key_len, size_t n, size_t batch) {
  const std::vector<Slice> slices = Records(keys, key_len, n);
  std::string dst;
  size_t total = 0;
  for (size_t at = 0; at < n; at += batch) {
    const size_t m = n - at < batch ? n - at : batch;
    dst.clear();
    p->policy->CreateFilter(slices.data() + at, static_cast<int>(m), &dst);
    total += dst.size();
  }
  return total;
}

// Appends the filter of all n keys to a malloc'd buffer.
uint8_t* ltb_bloom_create(const ltb_policy* p, const uint8_t* keys,
                          size_t key_len, size_t n, size_t* out_len) {
  const std::vector<Slice> slices = Records(keys, key_len, n);
  std::string dst;
  p->policy->CreateFilter(slices.data(), static_cast<int>(n), &dst);
  uint8_t* out = static_cast<uint8_t*>(std::malloc(dst.size()));
  if (out != nullptr) std::memcpy(out, dst.data(), dst.size());
  *out_len = dst.size();
  return out;
}

size_t ltb_bloom_match(const ltb_policy* p, const uint8_t* filter,
                       size_t filter_len, const uint8_t* queries,
                       size_t key_len, size_t n) {
  const Slice f(reinterpret_cast<const char*>(filter), filter_len);
  size_t hits = 0;
  for (size_t i = 0; i < n; i++) {
    hits += p->policy->KeyMayMatch(Record(queries, key_len, i), f) ? 1 : 0;
  }
  return hits;
}

// Builds a filter block: block b starts at offsets[b] and holds keys
// starts[b]..starts[b+1]. Returns the block's size.
size_t ltb_filter_block_build(const ltb_policy* p, const uint8_t* keys,
                              size_t key_len, const uint64_t* offsets,
                              const size_t* starts, size_t blocks) {
  leveldb::FilterBlockBuilder builder(p->policy.get());
  for (size_t b = 0; b < blocks; b++) {
    builder.StartBlock(offsets[b]);
    for (size_t i = starts[b]; i < starts[b + 1]; i++) {
      builder.AddKey(Record(keys, key_len, i));
    }
  }
  return builder.Finish().size();
}

size_t ltb_filter_block_match(const ltb_policy* p, const uint8_t* block,
                              size_t block_len, const uint8_t* queries,
                              size_t key_len, const uint64_t* offsets,
                              size_t n) {
  leveldb::FilterBlockReader reader(
      p->policy.get(), Slice(reinterpret_cast<const char*>(block), block_len));
  size_t hits = 0;
  for (size_t i = 0; i < n; i++) {
    hits += reader.KeyMayMatch(offsets[i], Record(queries, key_len, i)) ? 1 : 0;
  }
  return hits;
}

int ltb_builder_new(const char* path, int snappy, int bloom_bits,
                    ltb_builder** out, char** err) {
  std::unique_ptr<ltb_builder> b(new ltb_builder);
  b->options.compression =
      snappy != 0 ? leveldb::kSnappyCompression : leveldb::kNoCompression;
  if (bloom_bits > 0) {
    b->policy.reset(leveldb::NewBloomFilterPolicy(bloom_bits));
    b->options.filter_policy = b->policy.get();
  }
  leveldb::WritableFile* f = nullptr;
  Status s = leveldb::Env::Default()->NewWritableFile(path, &f);
  if (!s.ok()) return Report(s, err);
  b->file.reset(f);
  b->builder =
      std::make_unique<leveldb::TableBuilder>(b->options, b->file.get());
  *out = b.release();
  return 0;
}

// Adds n entries; keys must ascend, within the batch and after earlier ones.
int ltb_builder_add(ltb_builder* b, const uint8_t* keys, size_t key_len,
                    const uint8_t* values, size_t value_len, size_t n,
                    char** err) {
  for (size_t i = 0; i < n; i++) {
    b->builder->Add(Record(keys, key_len, i), Record(values, value_len, i));
  }
  return Report(b->builder->status(), err);
}

// Finish and Close, without a sync: the benchmark measures building, not the
// disk.
int ltb_builder_finish(ltb_builder* b, uint64_t* file_size, char** err) {
  b->finished = true;
  Status s = b->builder->Finish();
  if (s.ok()) s = b->file->Close();
  *file_size = b->builder->FileSize();
  return Report(s, err);
}

void ltb_builder_free(ltb_builder* b) {
  if (b == nullptr) return;
  // ~TableBuilder asserts that Finish or Abandon ran, and Abandon asserts
  // that Finish did not.
  if (b->builder != nullptr && !b->finished) b->builder->Abandon();
  b->builder.reset();
  delete b;
}

// Opens the table at path through Env::Default() (which maps it), with a
// Bloom filter policy if bloom_bits > 0 and an LRU block cache of
// cache_bytes if > 0.
int ltb_table_open(const char* path, int bloom_bits, size_t cache_bytes,
                   ltb_table** out, char** err) {
  std::unique_ptr<ltb_table> t(new ltb_table);
  if (bloom_bits > 0) {
    t->policy.reset(leveldb::NewBloomFilterPolicy(bloom_bits));
    t->options.filter_policy = t->policy.get();
  }
  if (cache_bytes > 0) {
    t->cache.reset(leveldb::NewLRUCache(cache_bytes));
    t->options.block_cache = t->cache.get();
  }
  leveldb::Env* env = leveldb::Env::Default();
  uint64_t size = 0;
  Status s = env->GetFileSize(path, &size);
  leveldb::RandomAccessFile* f = nullptr;
  if (s.ok()) s = env->NewRandomAccessFile(path, &f);
  if (!s.ok()) return Report(s, err);
  t->file.reset(f);
  leveldb::Table* table = nullptr;
  s = leveldb::Table::Open(t->options, t->file.get(), size, &table);
  if (!s.ok()) return Report(s, err);
  t->table.reset(table);
  *out = t.release();
  return 0;
}

void ltb_table_free(ltb_table* t) { delete t; }

// Runs n gets; returns how many found their key, and the value bytes copied.
int ltb_table_gets(ltb_table* t, const uint8_t* queries, size_t key_len,
                   size_t n, int verify_checksums, uint64_t* found,
                   uint64_t* value_bytes, char** err) {
  leveldb::ReadOptions ro;
  ro.verify_checksums = verify_checksums != 0;
  const InternalGetFn get = InternalGet();
  std::string value;
  uint64_t hits = 0;
  uint64_t bytes = 0;
  for (size_t i = 0; i < n; i++) {
    GetState state{Record(queries, key_len, i), false, &value};
    Status s = (t->table.get()->*get)(ro, state.key, &state, &SaveValue);
    if (!s.ok()) return Report(s, err);
    if (state.found) {
      hits++;
      bytes += value.size();
    }
  }
  *found = hits;
  *value_bytes = bytes;
  return 0;
}

// Iterates over the whole table; returns the entries and key + value bytes.
int ltb_table_scan(ltb_table* t, int verify_checksums, uint64_t* entries,
                   uint64_t* bytes, char** err) {
  leveldb::ReadOptions ro;
  ro.verify_checksums = verify_checksums != 0;
  std::unique_ptr<leveldb::Iterator> it(t->table->NewIterator(ro));
  uint64_t n = 0;
  uint64_t b = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    n++;
    b += it->key().size() + it->value().size();
  }
  *entries = n;
  *bytes = b;
  return Report(it->status(), err);
}

}  // extern "C"

// A database opened through DB::Open, with its own Bloom policy and block
// cache so that every setting is explicit.
struct ltb_db {
  leveldb::Options options;
  leveldb::ReadOptions read_options;
  std::unique_ptr<const leveldb::FilterPolicy> policy;
  std::unique_ptr<leveldb::Cache> cache;
  std::unique_ptr<leveldb::DB> db;
};

namespace {

// LevelDB 1.23's compaction triggers (db/dbformat.h, version_set.cc): four
// level-0 files, and 10^L MiB at level L >= 1. Levels run to 7.
constexpr int kLevels = 7;
constexpr int kL0Trigger = 4;

double MaxBytesForLevel(int level) {
  double result = 10. * 1048576.0;
  while (level > 1) {
    result *= 10;
    level--;
  }
  return result;
}

// Files and bytes per level, from the "leveldb.sstables" property, whose
// lines are " number:size[smallest .. largest]" under "--- level L ---".
bool LevelShape(leveldb::DB* db, uint64_t files[kLevels],
                uint64_t bytes[kLevels]) {
  std::string text;
  if (!db->GetProperty("leveldb.sstables", &text)) return false;
  for (int l = 0; l < kLevels; l++) files[l] = bytes[l] = 0;
  int level = -1;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    int l = 0;
    unsigned long long number = 0, size = 0;
    if (std::sscanf(line.c_str(), "--- level %d ---", &l) == 1) {
      level = l;
    } else if (level >= 0 && level < kLevels &&
               std::sscanf(line.c_str(), " %llu:%llu[", &number, &size) == 2) {
      files[level]++;
      bytes[level] += size;
    }
  }
  return true;
}

// Whether LevelDB would schedule no size compaction for this shape.
bool Settled(const uint64_t files[kLevels], const uint64_t bytes[kLevels]) {
  if (files[0] >= kL0Trigger) return false;
  for (int l = 1; l < kLevels - 1; l++) {
    if (static_cast<double>(bytes[l]) >= MaxBytesForLevel(l)) return false;
  }
  return true;
}

}  // namespace

extern "C" {

// Opens the database at path with LevelDB's default options except: a Bloom
// filter policy if bloom_bits > 0, an LRU block cache of cache_bytes, reads
// verifying checksums if verify != 0, and create_if_missing if create != 0.
int ltb_db_open(const char* path, int bloom_bits, size_t cache_bytes,
                int verify, int create, ltb_db** out, char** err) {
  std::unique_ptr<ltb_db> d(new ltb_db);
  if (bloom_bits > 0) {
    d->policy.reset(leveldb::NewBloomFilterPolicy(bloom_bits));
    d->options.filter_policy = d->policy.get();
  }
  d->cache.reset(leveldb::NewLRUCache(cache_bytes));
  d->options.block_cache = d->cache.get();
  d->options.create_if_missing = create != 0;
  d->read_options.verify_checksums = verify != 0;
  leveldb::DB* db = nullptr;
  Status s = leveldb::DB::Open(d->options, path, &db);
  if (!s.ok()) return Report(s, err);
  d->db.reset(db);
  *out = d.release();
  return 0;
}

// Closes the database: waits for a running compaction, leaves the memtable
// in its log.
void ltb_db_free(ltb_db* d) {
  if (d == nullptr) return;
  d->db.reset();
  delete d;
}

// Puts records i < n in the order given, `batch` to a WriteBatch, sync=false.
int ltb_db_write(ltb_db* d, const uint8_t* keys, size_t key_len,
                 const uint8_t* values, size_t value_len, size_t n,
                 size_t batch, char** err) {
  leveldb::WriteOptions wo;
  wo.sync = false;
  leveldb::WriteBatch b;
  for (size_t i = 0; i < n; i += batch) {
    b.Clear();
    size_t end = i + batch < n ? i + batch : n;
    for (size_t j = i; j < end; j++) {
      b.Put(Record(keys, key_len, j), Record(values, value_len, j));
    }
    Status s = d->db->Write(wo, &b);
    if (!s.ok()) return Report(s, err);
  }
  return 0;
}

// Waits (polling every 10 ms, at most timeout_ms) until no level is due for a
// size compaction; fills files[7] with the files per level. Returns 0 when
// settled, 1 with a message otherwise.
int ltb_db_settle(ltb_db* d, uint64_t timeout_ms, uint64_t* files,
                  char** err) {
  uint64_t bytes[kLevels];
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (!LevelShape(d->db.get(), files, bytes)) {
      return Report(Status::Corruption("no leveldb.sstables property"), err);
    }
    if (Settled(files, bytes)) return 0;
    auto waited = std::chrono::steady_clock::now() - start;
    if (std::chrono::duration_cast<std::chrono::milliseconds>(waited).count() >
        static_cast<int64_t>(timeout_ms)) {
      return Report(Status::IOError("compactions did not settle"), err);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// CompactRange(nullptr, nullptr): every file to the last level that holds
// data. LevelDB reports no status from it.
int ltb_db_compact_all(ltb_db* d, char** /*err*/) {
  d->db->CompactRange(nullptr, nullptr);
  return 0;
}

// DB::Get for each query into one reused string; counts keys found and
// value bytes.
int ltb_db_gets(ltb_db* d, const uint8_t* queries, size_t key_len, size_t n,
                uint64_t* found, uint64_t* value_bytes, char** err) {
  std::string value;
  uint64_t f = 0;
  uint64_t b = 0;
  for (size_t i = 0; i < n; i++) {
    Status s = d->db->Get(d->read_options, Record(queries, key_len, i), &value);
    if (s.ok()) {
      f++;
      b += value.size();
    } else if (!s.IsNotFound()) {
      return Report(s, err);
    }
  }
  *found = f;
  *value_bytes = b;
  return 0;
}

// The database's iterator from first to last; counts entries and key +
// value bytes.
int ltb_db_scan(ltb_db* d, uint64_t* entries, uint64_t* bytes, char** err) {
  std::unique_ptr<leveldb::Iterator> it(d->db->NewIterator(d->read_options));
  uint64_t n = 0;
  uint64_t b = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    n++;
    b += it->key().size() + it->value().size();
  }
  *entries = n;
  *bytes = b;
  return Report(it->status(), err);
}

}  // extern "C"
