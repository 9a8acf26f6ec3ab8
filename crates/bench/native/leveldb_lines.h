// Lines on standard input for the command-line tools' loops: read through
// stdio (fully buffered, standard error too), hex decoded into and encoded
// from reused strings, as `leveltable get --hex`, `build --hex` and
// `db write --hex` read and print them.
#ifndef LEVELTABLE_BENCH_LEVELDB_LINES_H_
#define LEVELTABLE_BENCH_LEVELDB_LINES_H_

#include <sys/types.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "leveldb/slice.h"

namespace ltb_lines {

inline int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

inline bool DecodeHex(const char* p, size_t n, std::string* out) {
  out->clear();
  if (n % 2 != 0) return false;
  for (size_t i = 0; i < n; i += 2) {
    const int hi = HexValue(p[i]);
    const int lo = HexValue(p[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi << 4 | lo));
  }
  return true;
}

inline void AppendHex(const leveldb::Slice& s, std::string* out) {
  static const char kDigits[] = "0123456789abcdef";
  for (size_t i = 0; i < s.size(); i++) {
    const unsigned char b = static_cast<unsigned char>(s[i]);
    out->push_back(kDigits[b >> 4]);
    out->push_back(kDigits[b & 0xf]);
  }
}

// Reads the next line of stdin without its newline into *buf (*len bytes).
inline bool NextLine(char** buf, size_t* cap, size_t* len) {
  const ssize_t n = getline(buf, cap, stdin);
  if (n < 0) return false;
  *len = static_cast<size_t>(n);
  if (*len > 0 && (*buf)[*len - 1] == '\n') (*len)--;
  return true;
}

inline void BufferStreams() {
  static char out[1 << 16];
  static char err[1 << 16];
  std::setvbuf(stdout, out, _IOFBF, sizeof out);
  std::setvbuf(stderr, err, _IOFBF, sizeof err);
}

}  // namespace ltb_lines

#endif  // LEVELTABLE_BENCH_LEVELDB_LINES_H_
