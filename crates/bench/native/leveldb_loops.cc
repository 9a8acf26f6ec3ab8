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

#include <fcntl.h>
#include <unistd.h>

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
#include "leveldb_lines.h"
#include "leveldb_report.h"
#include "leveldb_shape.h"

namespace {

using leveldb::Slice;
using leveldb::Status;

using ltb_report::CopyMessage;
using ltb_report::Record;
using ltb_report::Report;

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

using ltb_shape::kLevels;
using ltb_shape::LevelShape;
using ltb_shape::Settled;

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

// The same table read from several threads at once: leveldb::Table's
// InternalGet and NewIterator are safe to call concurrently, and a block
// cache, if any, is shared by all of them.
extern "C" {

// The queries split into `threads` contiguous parts, one thread each, every
// thread running ltb_table_gets's loop; totals over all threads.
int ltb_table_gets_threads(ltb_table* t, const uint8_t* queries,
                           size_t key_len, size_t n, size_t threads,
                           uint64_t* found, uint64_t* value_bytes,
                           char** err) {
  if (threads == 0) threads = 1;
  std::vector<uint64_t> hits(threads, 0);
  std::vector<uint64_t> bytes(threads, 0);
  std::vector<std::string> errors(threads);
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (size_t w = 0; w < threads; w++) {
    workers.emplace_back([&, w] {
      const size_t begin = n * w / threads;
      const size_t end = n * (w + 1) / threads;
      leveldb::ReadOptions ro;
      const InternalGetFn get = InternalGet();
      std::string value;
      for (size_t i = begin; i < end; i++) {
        GetState state{Record(queries, key_len, i), false, &value};
        Status s = (t->table.get()->*get)(ro, state.key, &state, &SaveValue);
        if (!s.ok()) {
          errors[w] = s.ToString();
          return;
        }
        if (state.found) {
          hits[w]++;
          bytes[w] += value.size();
        }
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  uint64_t f = 0;
  uint64_t b = 0;
  for (size_t w = 0; w < threads; w++) {
    if (!errors[w].empty()) {
      if (err != nullptr) *err = CopyMessage(errors[w]);
      return 1;
    }
    f += hits[w];
    b += bytes[w];
  }
  *found = f;
  *value_bytes = b;
  return 0;
}

// Every one of `threads` threads iterates over the whole table; totals over
// all threads.
int ltb_table_scan_threads(ltb_table* t, size_t threads, uint64_t* entries,
                           uint64_t* bytes, char** err) {
  if (threads == 0) threads = 1;
  std::vector<uint64_t> counts(threads, 0);
  std::vector<uint64_t> sizes(threads, 0);
  std::vector<std::string> errors(threads);
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (size_t w = 0; w < threads; w++) {
    workers.emplace_back([&, w] {
      leveldb::ReadOptions ro;
      std::unique_ptr<leveldb::Iterator> it(t->table->NewIterator(ro));
      uint64_t k = 0;
      uint64_t b = 0;
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        k++;
        b += it->key().size() + it->value().size();
      }
      if (!it->status().ok()) errors[w] = it->status().ToString();
      counts[w] = k;
      sizes[w] = b;
    });
  }
  for (std::thread& worker : workers) worker.join();
  uint64_t k = 0;
  uint64_t b = 0;
  for (size_t w = 0; w < threads; w++) {
    if (!errors[w].empty()) {
      if (err != nullptr) *err = CopyMessage(errors[w]);
      return 1;
    }
    k += counts[w];
    b += sizes[w];
  }
  *entries = k;
  *bytes = b;
  return 0;
}

}  // extern "C"

// The command-line tools' loops, written as a C++ tool over LevelDB would
// write them, for the runner's `cli` workload: lines from standard input
// through stdio (fully buffered, standard error too), hex decoded into and
// encoded from reused strings, the same lines printed as `leveltable get
// --hex` and read as `leveltable build --hex` reads them.
using ltb_lines::AppendHex;
using ltb_lines::BufferStreams;
using ltb_lines::DecodeHex;
using ltb_lines::NextLine;

extern "C" {

// `get --hex TABLE` with keys on stdin: KEY<TAB>VALUE on stdout for each key
// found, `not found: KEY` on stderr for the others. Returns the exit code:
// 0 all found, 1 some not found, 2 an error (message in *err).
int ltb_cli_get(const char* path, char** err) {
  BufferStreams();
  ltb_table* t = nullptr;
  if (ltb_table_open(path, 10, 0, &t, err) != 0) return 2;
  std::unique_ptr<ltb_table> table(t);
  leveldb::ReadOptions ro;
  const InternalGetFn get = InternalGet();
  char* buf = nullptr;
  size_t cap = 0;
  size_t len = 0;
  std::string key;
  std::string value;
  std::string line;
  int code = 0;
  while (NextLine(&buf, &cap, &len)) {
    if (!DecodeHex(buf, len, &key)) {
      if (err != nullptr) *err = CopyMessage("a key is not hex");
      code = 2;
      break;
    }
    GetState state{Slice(key), false, &value};
    Status s = (table->table.get()->*get)(ro, state.key, &state, &SaveValue);
    if (!s.ok()) {
      code = 2;
      Report(s, err);
      break;
    }
    line.clear();
    if (state.found) {
      AppendHex(key, &line);
      line.push_back('\t');
      AppendHex(value, &line);
      line.push_back('\n');
      std::fwrite(line.data(), 1, line.size(), stdout);
    } else {
      line.append("not found: ");
      AppendHex(key, &line);
      line.push_back('\n');
      std::fwrite(line.data(), 1, line.size(), stderr);
      code = 1;
    }
  }
  std::free(buf);
  std::fflush(stdout);
  std::fflush(stderr);
  return code;
}

// `build --hex OUT -`: a table from KEY<TAB>VALUE lines on stdin, keys
// strictly increasing, with `build`'s defaults (snappy, 10-bit Bloom filter,
// 4 KiB blocks, a restart every 16 keys), written under a temporary name,
// synced, renamed into place and its directory synced. Returns 0, or 2 with
// a message in *err.
int ltb_cli_build(const char* path, char** err) {
  BufferStreams();
  const std::string out(path);
  const std::string temp = out + ".tmp";
  ltb_builder* b = nullptr;
  if (ltb_builder_new(temp.c_str(), 1, 10, &b, err) != 0) return 2;
  std::unique_ptr<ltb_builder, void (*)(ltb_builder*)> builder(
      b, ltb_builder_free);
  char* buf = nullptr;
  size_t cap = 0;
  size_t len = 0;
  std::string key;
  std::string previous;
  std::string value;
  uint64_t entries = 0;
  std::string problem;
  while (NextLine(&buf, &cap, &len)) {
    const char* tab = static_cast<const char*>(std::memchr(buf, '\t', len));
    if (tab == nullptr || !DecodeHex(buf, tab - buf, &key) ||
        !DecodeHex(tab + 1, len - (tab + 1 - buf), &value)) {
      problem = "a line is not KEY<TAB>VALUE in hex";
      break;
    }
    if (entries > 0 && Slice(key).compare(Slice(previous)) <= 0) {
      problem = "keys out of order";
      break;
    }
    builder->builder->Add(key, value);
    previous.swap(key);
    entries++;
  }
  std::free(buf);
  if (!problem.empty()) {
    if (err != nullptr) *err = CopyMessage(problem);
    std::remove(temp.c_str());
    return 2;
  }
  builder->finished = true;
  Status s = builder->builder->Finish();
  if (s.ok()) s = builder->file->Sync();
  if (s.ok()) s = builder->file->Close();
  const uint64_t size = builder->builder->FileSize();
  if (!s.ok()) {
    std::remove(temp.c_str());
    return Report(s, err) * 2;
  }
  if (std::rename(temp.c_str(), out.c_str()) != 0) {
    if (err != nullptr) *err = CopyMessage("cannot rename " + temp);
    return 2;
  }
  const size_t slash = out.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : out.substr(0, slash);
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  std::fprintf(stderr, "wrote %s: %llu entries, file %llu bytes\n", path,
               static_cast<unsigned long long>(entries),
               static_cast<unsigned long long>(size));
  std::fflush(stderr);
  return 0;
}

}  // extern "C"
