// What the runner's C++ loops (leveldb_loops.cc, leveldb_write_loops.cc) share
// at their C boundary: LevelDB statuses and messages handed back as malloc'd
// strings, and keys read as fixed-length records of a caller's buffer.

#ifndef LEVELTABLE_BENCH_LEVELDB_REPORT_H_
#define LEVELTABLE_BENCH_LEVELDB_REPORT_H_

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "leveldb/slice.h"
#include "leveldb/status.h"

namespace ltb_report {

// A malloc'd copy of s for the caller to free (nullptr if out of memory).
inline char* CopyMessage(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p == nullptr) return nullptr;
  std::memcpy(p, s.data(), s.size() + 1);
  return p;
}

// 0 for an ok status; else 1, with its message in *err (if err is not null).
inline int Report(const leveldb::Status& s, char** err) {
  if (s.ok()) return 0;
  if (err != nullptr) *err = CopyMessage(s.ToString());
  return 1;
}

// Record i of the len-byte records at base.
inline leveldb::Slice Record(const uint8_t* base, size_t len, size_t i) {
  return leveldb::Slice(reinterpret_cast<const char*>(base) + i * len, len);
}

}  // namespace ltb_report

#endif  // LEVELTABLE_BENCH_LEVELDB_REPORT_H_
