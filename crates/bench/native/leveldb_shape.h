// LevelDB 1.23's level shape, for waiting until its compactions settle.
// Shared by the runner's C++ loops (leveldb_loops.cc, leveldb_write_loops.cc).

#ifndef LEVELTABLE_BENCH_LEVELDB_SHAPE_H_
#define LEVELTABLE_BENCH_LEVELDB_SHAPE_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "leveldb/db.h"

namespace ltb_shape {

// LevelDB 1.23's compaction triggers (db/dbformat.h, version_set.cc): four
// level-0 files, and 10^L MiB at level L >= 1. Levels run to 7.
constexpr int kLevels = 7;
constexpr int kL0Trigger = 4;

inline double MaxBytesForLevel(int level) {
  double result = 10. * 1048576.0;
  while (level > 1) {
    result *= 10;
    level--;
  }
  return result;
}

// Files and bytes per level, from the "leveldb.sstables" property, whose
// lines are " number:size[smallest .. largest]" under "--- level L ---".
inline bool LevelShape(leveldb::DB* db, uint64_t files[kLevels],
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
inline bool Settled(const uint64_t files[kLevels], const uint64_t bytes[kLevels]) {
  if (files[0] >= kL0Trigger) return false;
  for (int l = 1; l < kLevels - 1; l++) {
    if (static_cast<double>(bytes[l]) >= MaxBytesForLevel(l)) return false;
  }
  return true;
}

}  // namespace ltb_shape

#endif  // LEVELTABLE_BENCH_LEVELDB_SHAPE_H_
