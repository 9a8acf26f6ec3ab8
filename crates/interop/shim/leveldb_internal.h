// LevelDB 1.23's internal declarations that Debian's static libleveldb.a
// exports but whose headers it does not install (util/hash.h, util/crc32c.h,
// table/filter_block.h, table/format.h, db/dbformat.h), and an accessor for
// the private Table::InternalGet.
//
// Included by the interop shim (shim.cc) and by the benchmark's loops
// (crates/bench/native/leveldb_loops.cc), which finds this directory through
// the interop crate's `DEP_LEVELDB_SHIM_INCLUDE`. The library's code lays these
// classes out, so each class's data members must be exactly LevelDB 1.23's,
// in the same order; the build scripts refuse any other version.

#ifndef LEVELTABLE_INTEROP_LEVELDB_INTERNAL_H_
#define LEVELTABLE_INTEROP_LEVELDB_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "leveldb/comparator.h"
#include "leveldb/db.h"
#include "leveldb/env.h"
#include "leveldb/filter_policy.h"
#include "leveldb/options.h"
#include "leveldb/slice.h"
#include "leveldb/status.h"
#include "leveldb/table.h"

static_assert(leveldb::kMajorVersion == 1 && leveldb::kMinorVersion == 23,
              "leveldb_internal.h restates LevelDB 1.23's internal layouts");

namespace leveldb {

// util/hash.h
uint32_t Hash(const char* data, size_t n, uint32_t seed);

// util/crc32c.h
namespace crc32c {
uint32_t Extend(uint32_t init_crc, const char* data, size_t n);
}  // namespace crc32c

// table/filter_block.h. Constructor, StartBlock, AddKey, Finish and the
// reader's methods live in the library; the implicit destructor is generated
// by the includer, which is why the members must match exactly.
class FilterBlockBuilder {
 public:
  explicit FilterBlockBuilder(const FilterPolicy*);

  FilterBlockBuilder(const FilterBlockBuilder&) = delete;
  FilterBlockBuilder& operator=(const FilterBlockBuilder&) = delete;

  void StartBlock(uint64_t block_offset);
  void AddKey(const Slice& key);
  Slice Finish();

 private:
  void GenerateFilter();

  const FilterPolicy* policy_;
  std::string keys_;
  std::vector<size_t> start_;
  std::string result_;
  std::vector<Slice> tmp_keys_;
  std::vector<uint32_t> filter_offsets_;
};

class FilterBlockReader {
 public:
  FilterBlockReader(const FilterPolicy* policy, const Slice& contents);
  bool KeyMayMatch(uint64_t block_offset, const Slice& key);

 private:
  const FilterPolicy* policy_;
  const char* data_;
  const char* offset_;
  size_t num_;
  size_t base_lg_;
};

// table/format.h
class BlockHandle {
 public:
  BlockHandle() : offset_(~uint64_t{0}), size_(~uint64_t{0}) {}
  uint64_t offset() const { return offset_; }
  void set_offset(uint64_t offset) { offset_ = offset; }
  uint64_t size() const { return size_; }
  void set_size(uint64_t size) { size_ = size; }
  void EncodeTo(std::string* dst) const;
  Status DecodeFrom(Slice* input);

 private:
  uint64_t offset_;
  uint64_t size_;
};

struct BlockContents {
  Slice data;
  bool cachable;
  bool heap_allocated;
};

Status ReadBlock(RandomAccessFile* file, const ReadOptions& options,
                 const BlockHandle& handle, BlockContents* result);

// db/dbformat.h. Name() is each class's first out-of-line virtual function,
// so their vtables come from the library's dbformat.cc.
class InternalKey;

class InternalKeyComparator : public Comparator {
 private:
  const Comparator* user_comparator_;

 public:
  explicit InternalKeyComparator(const Comparator* c) : user_comparator_(c) {}
  const char* Name() const override;
  int Compare(const Slice& a, const Slice& b) const override;
  void FindShortestSeparator(std::string* start,
                             const Slice& limit) const override;
  void FindShortSuccessor(std::string* key) const override;

  const Comparator* user_comparator() const { return user_comparator_; }

  int Compare(const InternalKey& a, const InternalKey& b) const;
};

class InternalFilterPolicy : public FilterPolicy {
 private:
  const FilterPolicy* const user_policy_;

 public:
  explicit InternalFilterPolicy(const FilterPolicy* p) : user_policy_(p) {}
  const char* Name() const override;
  void CreateFilter(const Slice* keys, int n, std::string* dst) const override;
  bool KeyMayMatch(const Slice& key, const Slice& filter) const override;
};

}  // namespace leveldb

// Table::InternalGet, the lookup a database runs for every table it consults,
// is private. Names used in an explicit instantiation are exempt from access
// checking ([temp.spec.general]), so instantiating PrivateMember with
// &Table::InternalGet defines an accessor for the member pointer without
// touching LevelDB's headers. The names are local to each includer (an
// unnamed namespace), so the shim and the benchmark's loops, linked into one
// program, each instantiate their own.
namespace {

using InternalGetFn = leveldb::Status (leveldb::Table::*)(
    const leveldb::ReadOptions&, const leveldb::Slice&, void*,
    void (*)(void*, const leveldb::Slice&, const leveldb::Slice&));

struct TableInternalGet {
  using type = InternalGetFn;
  friend type Member(TableInternalGet);
};

template <typename Tag, typename Tag::type M>
struct PrivateMember {
  friend typename Tag::type Member(Tag) { return M; }
};

template struct PrivateMember<TableInternalGet, &leveldb::Table::InternalGet>;

// &Table::InternalGet, for `(table->*InternalGet())(options, key, arg, fn)`.
inline InternalGetFn InternalGet() { return Member(TableInternalGet()); }

}  // namespace

#endif  // LEVELTABLE_INTEROP_LEVELDB_INTERNAL_H_
