// The write workloads (db_bench's fillseq, fillrandom, overwrite, fillsync,
// readrandom, readseq, deleterandom) on LevelDB 1.23, for the comparison
// runner's `write` group.
//
// The database is opened with LevelDB's default Options (4 MiB write buffer,
// 2 MiB files, snappy, no filter policy, the default 8 MiB block cache) and
// create_if_missing. Keys arrive as fixed-length records in chunks the caller
// generates; values are 100-byte windows into a ring of compressible pieces,
// as db_bench's RandomGenerator hands them out. A database is safe for
// concurrent use, so several threads may call the put loop at once.

#include <chrono>
#include <cstdint>
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
