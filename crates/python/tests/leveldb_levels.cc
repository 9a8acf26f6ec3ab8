// Builds a database with LevelDB 1.23 (Debian's static libleveldb.a) whose seven levels
// all hold tables, and whose log holds the last writes:
//
//   leveldb_levels DIR BYTES SEED
//
// LevelDB's own compactions alone fill level 6 only once levels 1 to 5 outgrow their size
// budgets (10 MB times ten per level: over 100 GB), so the writes come in phases, one per
// level from 6 up to 1, each pushed down to its level by LevelDB's manual compaction of
// one level into the next (DBImpl::TEST_CompactRange, exported by the static library
// though its header is not installed). Each phase writes over the whole key space: new
// keys, newer values of older keys and deletions of older keys, so that a read must merge
// every level. Then a few memtables are written out as level-0 tables and the last writes
// stay in the log (LevelDB does not flush its memtable on close). About BYTES of values
// are written in all, most in the first phase. Prints the number of tables of each level.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>

#include "leveldb/db.h"
#include "leveldb/options.h"
#include "leveldb/slice.h"
#include "leveldb/status.h"
#include "leveldb/write_batch.h"

namespace leveldb {
// db/db_impl.h: the two test hooks used here (non-virtual members of the class
// leveldb::DB::Open returns).
class DBImpl : public DB {
 public:
  void TEST_CompactRange(int level, const Slice* begin, const Slice* end);
  Status TEST_CompactMemTable();
};
}  // namespace leveldb

namespace {

void Check(const leveldb::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "leveldb_levels: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

std::string Key(uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "k%012llu", static_cast<unsigned long long>(i));
  return buf;
}

std::string Value(std::mt19937_64& rng, int phase) {
  // 80 to 239 bytes: a phase tag, then random bytes (snappy cannot shrink them).
  size_t n = 80 + rng() % 160;
  std::string v = "p" + std::to_string(phase) + ":";
  while (v.size() < n) {
    uint64_t r = rng();
    v.append(reinterpret_cast<const char*>(&r), sizeof r);
  }
  v.resize(n);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: leveldb_levels DIR BYTES SEED\n");
    return 2;
  }
  const char* dir = argv[1];
  const double total = std::strtod(argv[2], nullptr);
  std::mt19937_64 rng(std::strtoull(argv[3], nullptr, 10));

  leveldb::Options options;
  options.create_if_missing = true;
  options.error_if_exists = true;
  options.write_buffer_size = 1 << 20;
  options.max_file_size = total > (512 << 20) ? 4 << 20 : 1 << 20;
  leveldb::DB* opened = nullptr;
  Check(leveldb::DB::Open(options, dir, &opened), "open");
  auto* db = static_cast<leveldb::DBImpl*>(opened);
  leveldb::WriteOptions wo;

  // The key space: key(i) for i < keys. The first phase writes nine keys in ten; later
  // ones add the tenth, overwrite and delete.
  const double entry = 160 + 14;
  const uint64_t keys = static_cast<uint64_t>(total * 0.6 / entry / 0.9) + 1000;
  // Bytes per phase, level 6 first: the first phase most of them; the others within
  // their level's budget (10 MB * 10^(level-1)), so LevelDB's own compactions keep them
  // at their level.
  const double share[7] = {0, 0.015, 0.025, 0.05, 0.1, 0.2, 0.6};
  const double budget[7] = {0, 8e6, 80e6, 800e6, 8e9, 80e9, 800e9};

  for (int level = 6; level >= 1; level--) {
    double bytes = std::min(total * share[level], budget[level]);
    leveldb::WriteBatch batch;
    size_t in_batch = 0;
    auto flush = [&] {
      Check(db->Write(wo, &batch), "write");
      batch.Clear();
      in_batch = 0;
    };
    if (level == 6) {
      // A permutation of the keys (a multiplier prime to `keys`), nine in ten of them.
      uint64_t step = 2654435761ULL % keys;
      while (std::gcd(step, keys) != 1) step++;
      for (uint64_t j = 0; j < keys; j++) {
        uint64_t i = j * step % keys;
        if (i % 10 == 9) continue;
        batch.Put(Key(i), Value(rng, level));
        if (++in_batch == 1000) flush();
      }
    } else {
      for (double written = 0; written < bytes;) {
        uint64_t i = rng() % keys;
        if (rng() % 8 == 0) {
          batch.Delete(Key(i));
        } else {
          std::string v = Value(rng, level);
          written += v.size() + 14;
          batch.Put(Key(i), v);
        }
        if (++in_batch == 1000) flush();
      }
    }
    flush();
    Check(db->TEST_CompactMemTable(), "memtable compaction");
    for (int from = 0; from < level; from++) db->TEST_CompactRange(from, nullptr, nullptr);
  }

  // Level 0: three memtables' worth written out (LevelDB compacts level 0 at four
  // tables), then the log: writes that stay in the memtable.
  for (int table = 0; table <= 3; table++) {
    leveldb::WriteBatch batch;
    size_t bytes = 0;
    size_t limit = table < 3 ? options.write_buffer_size / 2 : options.write_buffer_size / 3;
    while (bytes < limit) {
      uint64_t i = rng() % keys;
      if (rng() % 8 == 0) {
        batch.Delete(Key(i));
        bytes += 14;
      } else {
        std::string v = Value(rng, table < 3 ? 0 : 7);
        bytes += v.size() + 14;
        batch.Put(Key(i), v);
      }
    }
    Check(db->Write(wo, &batch), "write");
    if (table < 3) Check(db->TEST_CompactMemTable(), "memtable compaction");
  }

  for (int level = 0; level < 7; level++) {
    std::string n;
    db->GetProperty("leveldb.num-files-at-level" + std::to_string(level), &n);
    std::printf("%s%s", level ? " " : "", n.c_str());
  }
  std::printf("\n");
  delete opened;
  return 0;
}
