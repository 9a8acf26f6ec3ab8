// The write workloads (db_bench's fillseq, fillrandom, overwrite, fillsync,
// readrandom, readseq, deleterandom) on LevelDB 1.23, for the comparison
// runner's `write` group, and `db write` as a C++ tool, for its `cli` group.
//
// The database is opened with LevelDB's default Options (4 MiB write buffer,
// 2 MiB files, snappy, no filter policy, the default 8 MiB block cache) and
// create_if_missing. Keys arrive as fixed-length records in chunks the caller
// generates; values are 100-byte windows into a ring of compressible pieces,
// as db_bench's RandomGenerator hands them out. A database is safe for
// concurrent use, so several threads may call the put loop at once.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "leveldb/db.h"
#include "leveldb/iterator.h"
#include "leveldb/options.h"
#include "leveldb/slice.h"
#include "leveldb/status.h"
#include "leveldb/write_batch.h"
#include "leveldb_lines.h"
#include "leveldb_report.h"
#include "leveldb_shape.h"

namespace {

using leveldb::Slice;
using leveldb::Status;

using ltb_report::Record;
using ltb_report::Report;

}  // namespace

struct ltb_wdb {
  leveldb::Options options;
  std::unique_ptr<leveldb::DB> db;
};

extern "C" {

// Opens (creating it if missing) the database at path with default options.
int ltb_wdb_open(const char* path, ltb_wdb** out, char** err) {
  std::unique_ptr<ltb_wdb> d(new ltb_wdb);
  d->options.create_if_missing = true;
  leveldb::DB* db = nullptr;
  Status s = leveldb::DB::Open(d->options, path, &db);
  if (!s.ok()) return Report(s, err);
  d->db.reset(db);
  *out = d.release();
  return 0;
}

// Closes the database: waits for a running compaction; the memtable stays in
// its log.
void ltb_wdb_free(ltb_wdb* d) {
  if (d == nullptr) return;
  d->db.reset();
  delete d;
}

// DB::Put of keys[i] -> value (first + i) for i < n, where value j is bytes
// [(j % ring_values) * value_len, +value_len) of ring; one write per put,
// synced if sync != 0.
int ltb_wdb_put(ltb_wdb* d, const uint8_t* keys, size_t key_len, size_t n,
                const uint8_t* ring, size_t value_len, size_t ring_values,
                uint64_t first, int sync, char** err) {
  leveldb::WriteOptions wo;
  wo.sync = sync != 0;
  for (size_t i = 0; i < n; i++) {
    size_t v = static_cast<size_t>((first + i) % ring_values);
    Status s = d->db->Put(wo, Record(keys, key_len, i),
                          Record(ring, value_len, v));
    if (!s.ok()) return Report(s, err);
  }
  return 0;
}

// DB::Delete of keys[i] for i < n, one write each.
int ltb_wdb_delete(ltb_wdb* d, const uint8_t* keys, size_t key_len, size_t n,
                   int sync, char** err) {
  leveldb::WriteOptions wo;
  wo.sync = sync != 0;
  for (size_t i = 0; i < n; i++) {
    Status s = d->db->Delete(wo, Record(keys, key_len, i));
    if (!s.ok()) return Report(s, err);
  }
  return 0;
}

// DB::Get with default ReadOptions for each key into one reused string;
// counts keys found and value bytes.
int ltb_wdb_gets(ltb_wdb* d, const uint8_t* keys, size_t key_len, size_t n,
                 uint64_t* found, uint64_t* value_bytes, char** err) {
  leveldb::ReadOptions ro;
  std::string value;
  uint64_t f = 0;
  uint64_t b = 0;
  for (size_t i = 0; i < n; i++) {
    Status s = d->db->Get(ro, Record(keys, key_len, i), &value);
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

// The iterator from first to last; counts entries and key + value bytes.
int ltb_wdb_scan(ltb_wdb* d, uint64_t* entries, uint64_t* bytes, char** err) {
  std::unique_ptr<leveldb::Iterator> it(
      d->db->NewIterator(leveldb::ReadOptions()));
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

// Waits (polling every 10 ms, at most timeout_ms) until no level is due for a
// size compaction.
int ltb_wdb_settle(ltb_wdb* d, uint64_t timeout_ms, char** err) {
  uint64_t files[ltb_shape::kLevels];
  uint64_t bytes[ltb_shape::kLevels];
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (!ltb_shape::LevelShape(d->db.get(), files, bytes)) {
      return Report(Status::Corruption("no leveldb.sstables property"), err);
    }
    if (ltb_shape::Settled(files, bytes)) return 0;
    auto waited = std::chrono::steady_clock::now() - start;
    if (std::chrono::duration_cast<std::chrono::milliseconds>(waited).count() >
        static_cast<int64_t>(timeout_ms)) {
      return Report(Status::IOError("compactions did not settle"), err);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // extern "C"

extern "C" {

// `leveltable db write --hex --batch BATCH [--sync] DIR -` written as a C++
// tool over LevelDB would write it: `put<TAB>KEY<TAB>VALUE` and `del<TAB>KEY`
// lines in hex on standard input, every `batch` of them one WriteBatch (synced
// if `sync`), into the database at dir (created if missing, default options),
// closed at the end. Returns 0, or 2 with the message in *err.
int ltb_cli_db_write(const char* dir, int batch, int sync, char** err) {
  ltb_lines::BufferStreams();
  leveldb::Options options;
  options.create_if_missing = true;
  leveldb::DB* raw = nullptr;
  Status s = leveldb::DB::Open(options, dir, &raw);
  if (!s.ok()) return Report(s, err) * 2;
  std::unique_ptr<leveldb::DB> db(raw);
  leveldb::WriteOptions write_options;
  write_options.sync = sync != 0;
  leveldb::WriteBatch b;
  char* buf = nullptr;
  size_t cap = 0;
  size_t len = 0;
  std::string key;
  std::string value;
  int in_batch = 0;
  uint64_t ops = 0;
  const char* problem = nullptr;
  while (ltb_lines::NextLine(&buf, &cap, &len)) {
    if (len == 0) continue;
    const char* tab = static_cast<const char*>(std::memchr(buf, '\t', len));
    if (tab == nullptr) {
      problem = "a line has no tab";
      break;
    }
    const size_t op_len = tab - buf;
    const char* rest = tab + 1;
    const size_t rest_len = len - (op_len + 1);
    if (op_len == 3 && std::memcmp(buf, "put", 3) == 0) {
      const char* tab2 = static_cast<const char*>(std::memchr(rest, '\t', rest_len));
      if (tab2 == nullptr || !ltb_lines::DecodeHex(rest, tab2 - rest, &key) ||
          !ltb_lines::DecodeHex(tab2 + 1, rest_len - (tab2 + 1 - rest), &value)) {
        problem = "a put line is not put<TAB>KEY<TAB>VALUE in hex";
        break;
      }
      b.Put(key, value);
    } else if (op_len == 3 && std::memcmp(buf, "del", 3) == 0) {
      if (!ltb_lines::DecodeHex(rest, rest_len, &key)) {
        problem = "a del line is not del<TAB>KEY in hex";
        break;
      }
      b.Delete(key);
    } else {
      problem = "a line is neither put nor del";
      break;
    }
    ops++;
    if (++in_batch >= batch) {
      s = db->Write(write_options, &b);
      if (!s.ok()) break;
      b.Clear();
      in_batch = 0;
    }
  }
  std::free(buf);
  if (problem != nullptr) {
    if (err != nullptr) *err = ltb_report::CopyMessage(problem);
    return 2;
  }
  if (s.ok() && in_batch > 0) s = db->Write(write_options, &b);
  if (!s.ok()) return Report(s, err) * 2;
  db.reset();
  std::fprintf(stderr, "wrote %s: %llu operations\n", dir,
               static_cast<unsigned long long>(ops));
  std::fflush(stderr);
  return 0;
}

}  // extern "C"
