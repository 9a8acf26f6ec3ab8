// A thin C ABI over LevelDB 1.23's table stack, linked against Debian's static
// libleveldb.a. See shim.h for the calling conventions.
//
// Besides the public headers, the shim reaches symbols the static library
// exports but whose headers Debian does not install; leveldb_internal.h
// declares them, as LevelDB 1.23 lays them out.

#include "shim.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

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

#include "leveldb_internal.h"

namespace {

using leveldb::Slice;
using leveldb::Status;

// Every byte LevelDB reads (footer 48 bytes, a block plus its 5-byte trailer)
// is at least this long. ReadBlock computes `handle.size() + 5` in size_t, so
// a corrupt handle near 2^64 wraps to a read of 0..4 bytes after which it
// indexes before its buffer; refusing such reads keeps that out of reach.
constexpr size_t kMinLegitimateRead = 5;

constexpr size_t kTrailerSize = 5;

// The filter builder emits one empty filter per 2 KiB of offsets it passes;
// past this offset (64 GiB) a single call could allocate gigabytes.
constexpr uint64_t kMaxFilterBlockOffset = uint64_t{1} << 36;
constexpr unsigned kFilterBaseLg = 11;

int Code(const Status& s) {
  if (s.ok()) return LT_OK;
  if (s.IsNotFound()) return LT_NOT_FOUND;
  if (s.IsCorruption()) return LT_CORRUPTION;
  if (s.IsNotSupportedError()) return LT_NOT_SUPPORTED;
  if (s.IsInvalidArgument()) return LT_INVALID_ARGUMENT;
  return LT_IO_ERROR;
}

char* CopyString(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p == nullptr) return nullptr;
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  return p;
}

int Fail(int code, const std::string& message, char** err) {
  if (err != nullptr) *err = CopyString(message);
  return code;
}

int FromStatus(const Status& s, char** err) {
  if (s.ok()) return LT_OK;
  return Fail(Code(s), s.ToString(), err);
}

// Copies bytes into a malloc'd lt_bytes; false when out of memory.
bool CopyOut(const char* data, size_t len, lt_bytes* out) {
  out->data = static_cast<uint8_t*>(std::malloc(len == 0 ? 1 : len));
  out->len = 0;
  if (out->data == nullptr) return false;
  if (len != 0) std::memcpy(out->data, data, len);
  out->len = len;
  return true;
}

int CopyOutOr(const char* data, size_t len, lt_bytes* out, char** err) {
  if (!CopyOut(data, len, out)) {
    return Fail(LT_EXCEPTION, "out of memory copying a result", err);
  }
  return LT_OK;
}

// Runs body, turning any C++ exception into LT_EXCEPTION so none crosses the
// C ABI.
template <typename F>
int Guard(char** err, F body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return Fail(LT_EXCEPTION, std::string("exception: ") + e.what(), err);
  } catch (...) {
    return Fail(LT_EXCEPTION, "unknown exception", err);
  }
}

Slice AsSlice(const uint8_t* data, size_t len) {
  return Slice(reinterpret_cast<const char*>(data), len);
}

// A RandomAccessFile that counts reads, over either bytes it owns or another
// file (from Env::Default()). In-memory reads behave like pread: a read past
// the end returns the bytes that exist, which LevelDB reports as a truncated
// block.
class CountingFile final : public leveldb::RandomAccessFile {
 public:
  explicit CountingFile(std::string contents)
      : contents_(std::move(contents)) {}
  explicit CountingFile(std::unique_ptr<leveldb::RandomAccessFile> base)
      : base_(std::move(base)) {}

  Status Read(uint64_t offset, size_t n, Slice* result,
              char* scratch) const override {
    if (n < kMinLegitimateRead) {
      *result = Slice();
      return Status::IOError("interop: refused a read shorter than 5 bytes",
                             "a block handle size wrapped around");
    }
    reads_.fetch_add(1, std::memory_order_relaxed);
    if (base_ != nullptr) return base_->Read(offset, n, result, scratch);
    if (offset >= contents_.size()) {
      *result = Slice();
      return Status::OK();
    }
    const size_t available = contents_.size() - static_cast<size_t>(offset);
    const size_t m = n < available ? n : available;
    std::memcpy(scratch, contents_.data() + offset, m);
    *result = Slice(scratch, m);
    return Status::OK();
  }

  uint64_t reads() const { return reads_.load(std::memory_order_relaxed); }

 private:
  std::string contents_;
  std::unique_ptr<leveldb::RandomAccessFile> base_;
  mutable std::atomic<uint64_t> reads_{0};
};

// A WritableFile collecting everything appended to it.
class StringSink final : public leveldb::WritableFile {
 public:
  Status Append(const Slice& data) override {
    contents_.append(data.data(), data.size());
    return Status::OK();
  }
  Status Close() override { return Status::OK(); }
  Status Flush() override { return Status::OK(); }
  Status Sync() override { return Status::OK(); }

  const std::string& contents() const { return contents_; }

 private:
  std::string contents_;
};

// leveldb::Options plus the comparator and filter policy objects it points
// to, which must outlive any builder or table using them.
class OptionsBundle {
 public:
  // Returns LT_OK or LT_REJECTED (with a message) for options LevelDB would
  // assert on.
  int Init(const lt_options& o, char** err) {
    if (o.block_restart_interval < 1) {
      return Fail(LT_REJECTED, "block_restart_interval must be at least 1",
                  err);
    }
    if (o.compression != 0 && o.compression != 1) {
      return Fail(LT_REJECTED, "compression must be 0 (none) or 1 (snappy)",
                  err);
    }
    if (o.bloom_bits_per_key < 0) {
      return Fail(LT_REJECTED, "bloom_bits_per_key must not be negative", err);
    }
    if (o.comparator != 0 && o.comparator != 1) {
      return Fail(LT_REJECTED, "comparator must be 0 (bytewise) or 1 (internal)",
                  err);
    }
    options_.block_size = o.block_size;
    options_.block_restart_interval = o.block_restart_interval;
    options_.compression = o.compression == 1 ? leveldb::kSnappyCompression
                                              : leveldb::kNoCompression;
    options_.paranoid_checks = o.paranoid_checks != 0;
    internal_keys_ = o.comparator == 1;
    if (internal_keys_) {
      internal_comparator_ = std::make_unique<leveldb::InternalKeyComparator>(
          leveldb::BytewiseComparator());
      options_.comparator = internal_comparator_.get();
    } else {
      options_.comparator = leveldb::BytewiseComparator();
    }
    if (o.bloom_bits_per_key > 0) {
      bloom_.reset(leveldb::NewBloomFilterPolicy(o.bloom_bits_per_key));
      if (internal_keys_) {
        internal_policy_ =
            std::make_unique<leveldb::InternalFilterPolicy>(bloom_.get());
        options_.filter_policy = internal_policy_.get();
      } else {
        options_.filter_policy = bloom_.get();
      }
    }
    return LT_OK;
  }

  // The internal-key comparator asserts that keys carry an 8-byte tag.
  int CheckKey(const Slice& key, char** err) const {
    if (internal_keys_ && key.size() < 8) {
      return Fail(LT_REJECTED, "an internal key needs at least 8 bytes", err);
    }
    return LT_OK;
  }

  const leveldb::Options& options() const { return options_; }

 private:
  leveldb::Options options_;
  bool internal_keys_ = false;
  std::unique_ptr<const leveldb::FilterPolicy> bloom_;
  std::unique_ptr<leveldb::InternalFilterPolicy> internal_policy_;
  std::unique_ptr<leveldb::InternalKeyComparator> internal_comparator_;
};

struct GetResult {
  bool found = false;
  std::string key;
  std::string value;
};

void SaveResult(void* arg, const Slice& k, const Slice& v) {
  GetResult* r = static_cast<GetResult*>(arg);
  r->found = true;
  r->key.assign(k.data(), k.size());
  r->value.assign(v.data(), v.size());
}

}  // namespace

struct lt_policy {
  std::unique_ptr<const leveldb::FilterPolicy> policy;
};

struct lt_filter_builder {
  explicit lt_filter_builder(const leveldb::FilterPolicy* p) : builder(p) {}
  leveldb::FilterBlockBuilder builder;
  // Filters generated so far; StartBlock asserts it never goes back.
  uint64_t generated = 0;
  bool finished = false;
};

struct lt_filter_reader {
  lt_filter_reader(const leveldb::FilterPolicy* p, const Slice& contents)
      : reader(p, contents) {}
  leveldb::FilterBlockReader reader;
};

struct lt_table_builder {
  OptionsBundle bundle;
  std::unique_ptr<leveldb::WritableFile> file;
  StringSink* sink = nullptr;  // file, when building in memory
  std::unique_ptr<leveldb::TableBuilder> builder;
  std::string last_key;
  bool finished = false;

  ~lt_table_builder() {
    // ~TableBuilder asserts that Finish or Abandon ran. The builder goes before the file
    // it writes to; the file's own destructor closes it if Finish did not.
    if (builder != nullptr && !finished) builder->Abandon();
    builder.reset();
  }
};

struct lt_table {
  OptionsBundle bundle;
  std::unique_ptr<CountingFile> file;
  std::unique_ptr<leveldb::Table> table;
};

struct lt_iter {
  std::unique_ptr<leveldb::Iterator> iter;
  const OptionsBundle* bundle;
};

extern "C" {

void lt_free(void* ptr) { std::free(ptr); }

uint32_t lt_hash(const uint8_t* data, size_t len, uint32_t seed) {
  return leveldb::Hash(reinterpret_cast<const char*>(data), len, seed);
}

uint32_t lt_crc32c_extend(uint32_t crc, const uint8_t* data, size_t len) {
  return leveldb::crc32c::Extend(crc, reinterpret_cast<const char*>(data),
                                 len);
}

lt_policy* lt_bloom_new(int32_t bits_per_key) {
  try {
    std::unique_ptr<lt_policy> p(new lt_policy);
    p->policy.reset(leveldb::NewBloomFilterPolicy(bits_per_key));
    return p.release();
  } catch (...) {
    return nullptr;
  }
}

void lt_policy_free(lt_policy* policy) { delete policy; }

const char* lt_policy_name(const lt_policy* policy) {
  return policy->policy->Name();
}

int lt_policy_create_filter(const lt_policy* policy, const uint8_t* const* keys,
                            const size_t* key_lens, size_t n,
                            const uint8_t* prefix, size_t prefix_len,
                            lt_bytes* out, char** err) {
  return Guard(err, [&] {
    if (n > static_cast<size_t>(INT32_MAX)) {
      return Fail(LT_REJECTED, "too many keys for one filter", err);
    }
    std::vector<Slice> slices;
    slices.reserve(n);
    for (size_t i = 0; i < n; i++) slices.push_back(AsSlice(keys[i], key_lens[i]));
    std::string dst(reinterpret_cast<const char*>(prefix), prefix_len);
    policy->policy->CreateFilter(slices.data(), static_cast<int>(n), &dst);
    return CopyOutOr(dst.data(), dst.size(), out, err);
  });
}

int lt_policy_key_may_match(const lt_policy* policy, const uint8_t* key,
                            size_t key_len, const uint8_t* filter,
                            size_t filter_len) {
  return policy->policy->KeyMayMatch(AsSlice(key, key_len),
                                     AsSlice(filter, filter_len))
             ? 1
             : 0;
}

lt_filter_builder* lt_filter_builder_new(const lt_policy* policy) {
  try {
    return new lt_filter_builder(policy->policy.get());
  } catch (...) {
    return nullptr;
  }
}

void lt_filter_builder_free(lt_filter_builder* builder) { delete builder; }

int lt_filter_builder_start_block(lt_filter_builder* builder,
                                  uint64_t block_offset, char** err) {
  return Guard(err, [&] {
    if (builder->finished) {
      return Fail(LT_REJECTED, "filter block already finished", err);
    }
    if (block_offset >= kMaxFilterBlockOffset) {
      return Fail(LT_REJECTED, "block offset beyond the 64 GiB limit", err);
    }
    const uint64_t index = block_offset >> kFilterBaseLg;
    if (index < builder->generated) {
      return Fail(LT_REJECTED,
                  "block offset goes back before a generated filter", err);
    }
    builder->builder.StartBlock(block_offset);
    builder->generated = index;
    return static_cast<int>(LT_OK);
  });
}

int lt_filter_builder_add_key(lt_filter_builder* builder, const uint8_t* key,
                              size_t key_len, char** err) {
  return Guard(err, [&] {
    if (builder->finished) {
      return Fail(LT_REJECTED, "filter block already finished", err);
    }
    builder->builder.AddKey(AsSlice(key, key_len));
    return static_cast<int>(LT_OK);
  });
}

int lt_filter_builder_finish(lt_filter_builder* builder, lt_bytes* out,
                             char** err) {
  return Guard(err, [&] {
    if (builder->finished) {
      return Fail(LT_REJECTED, "filter block already finished", err);
    }
    builder->finished = true;
    const Slice block = builder->builder.Finish();
    return CopyOutOr(block.data(), block.size(), out, err);
  });
}

lt_filter_reader* lt_filter_reader_new(const lt_policy* policy,
                                       const uint8_t* contents, size_t len) {
  try {
    return new lt_filter_reader(policy->policy.get(), AsSlice(contents, len));
  } catch (...) {
    return nullptr;
  }
}

void lt_filter_reader_free(lt_filter_reader* reader) { delete reader; }

int lt_filter_reader_key_may_match(lt_filter_reader* reader,
                                   uint64_t block_offset, const uint8_t* key,
                                   size_t key_len) {
  return reader->reader.KeyMayMatch(block_offset, AsSlice(key, key_len)) ? 1
                                                                         : 0;
}

int lt_table_builder_new(const lt_options* options, const char* path,
                         lt_table_builder** out, char** err) {
  *out = nullptr;
  return Guard(err, [&] {
    std::unique_ptr<lt_table_builder> b(new lt_table_builder);
    int code = b->bundle.Init(*options, err);
    if (code != LT_OK) return code;
    if (path == nullptr) {
      b->sink = new StringSink;
      b->file.reset(b->sink);
    } else {
      leveldb::WritableFile* f = nullptr;
      Status s = leveldb::Env::Default()->NewWritableFile(path, &f);
      if (!s.ok()) return FromStatus(s, err);
      b->file.reset(f);
    }
    b->builder = std::make_unique<leveldb::TableBuilder>(b->bundle.options(),
                                                         b->file.get());
    *out = b.release();
    return static_cast<int>(LT_OK);
  });
}

void lt_table_builder_free(lt_table_builder* builder) { delete builder; }

int lt_table_builder_add(lt_table_builder* builder, const uint8_t* key,
                         size_t key_len, const uint8_t* value, size_t value_len,
                         char** err) {
  return Guard(err, [&] {
    if (builder->finished) {
      return Fail(LT_REJECTED, "table already finished", err);
    }
    const Slice k = AsSlice(key, key_len);
    int code = builder->bundle.CheckKey(k, err);
    if (code != LT_OK) return code;
    // TableBuilder::Add asserts strictly increasing keys.
    if (builder->builder->NumEntries() > 0 &&
        builder->bundle.options().comparator->Compare(
            k, Slice(builder->last_key)) <= 0) {
      return Fail(LT_REJECTED, "keys must be added in strictly increasing order",
                  err);
    }
    builder->builder->Add(k, AsSlice(value, value_len));
    builder->last_key.assign(k.data(), k.size());
    return FromStatus(builder->builder->status(), err);
  });
}

int lt_table_builder_flush(lt_table_builder* builder, char** err) {
  return Guard(err, [&] {
    if (builder->finished) {
      return Fail(LT_REJECTED, "table already finished", err);
    }
    builder->builder->Flush();
    return FromStatus(builder->builder->status(), err);
  });
}

uint64_t lt_table_builder_num_entries(const lt_table_builder* builder) {
  return builder->builder->NumEntries();
}

uint64_t lt_table_builder_file_size(const lt_table_builder* builder) {
  return builder->builder->FileSize();
}

int lt_table_builder_finish(lt_table_builder* builder, lt_bytes* out,
                            char** err) {
  return Guard(err, [&] {
    if (builder->finished) {
      return Fail(LT_REJECTED, "table already finished", err);
    }
    builder->finished = true;
    Status s = builder->builder->Finish();
    if (s.ok() && builder->sink == nullptr) s = builder->file->Sync();
    if (s.ok() && builder->sink == nullptr) s = builder->file->Close();
    if (!s.ok()) return FromStatus(s, err);
    if (builder->sink != nullptr) {
      const std::string& c = builder->sink->contents();
      return CopyOutOr(c.data(), c.size(), out, err);
    }
    out->data = nullptr;
    out->len = 0;
    return static_cast<int>(LT_OK);
  });
}

int lt_table_open(const lt_options* options, const char* path,
                  const uint8_t* data, size_t len, lt_table** out, char** err) {
  *out = nullptr;
  return Guard(err, [&] {
    std::unique_ptr<lt_table> t(new lt_table);
    int code = t->bundle.Init(*options, err);
    if (code != LT_OK) return code;
    uint64_t size = 0;
    if (path == nullptr) {
      t->file = std::make_unique<CountingFile>(
          std::string(reinterpret_cast<const char*>(data), len));
      size = len;
    } else {
      leveldb::Env* env = leveldb::Env::Default();
      Status s = env->GetFileSize(path, &size);
      leveldb::RandomAccessFile* f = nullptr;
      if (s.ok()) s = env->NewRandomAccessFile(path, &f);
      if (!s.ok()) return FromStatus(s, err);
      t->file = std::make_unique<CountingFile>(
          std::unique_ptr<leveldb::RandomAccessFile>(f));
    }
    leveldb::Table* table = nullptr;
    Status s = leveldb::Table::Open(t->bundle.options(), t->file.get(), size,
                                    &table);
    if (!s.ok()) return FromStatus(s, err);
    t->table.reset(table);
    *out = t.release();
    return static_cast<int>(LT_OK);
  });
}

void lt_table_free(lt_table* table) { delete table; }

uint64_t lt_table_block_reads(const lt_table* table) {
  return table->file->reads();
}

int lt_table_approximate_offset_of(const lt_table* table, const uint8_t* key,
                                   size_t key_len, uint64_t* out, char** err) {
  *out = 0;
  return Guard(err, [&] {
    const Slice k = AsSlice(key, key_len);
    int code = table->bundle.CheckKey(k, err);
    if (code != LT_OK) return code;
    *out = table->table->ApproximateOffsetOf(k);
    return static_cast<int>(LT_OK);
  });
}

int lt_table_internal_get(lt_table* table, int verify_checksums,
                          const uint8_t* key, size_t key_len, int* found,
                          lt_bytes* found_key, lt_bytes* found_value,
                          int* block_read, char** err) {
  *found = 0;
  *block_read = 0;
  return Guard(err, [&] {
    const Slice k = AsSlice(key, key_len);
    int code = table->bundle.CheckKey(k, err);
    if (code != LT_OK) return code;
    leveldb::ReadOptions ro;
    ro.verify_checksums = verify_checksums != 0;
    GetResult r;
    const uint64_t before = table->file->reads();
    InternalGetFn get = InternalGet();
    Status s = (table->table.get()->*get)(ro, k, &r, &SaveResult);
    *block_read = table->file->reads() != before ? 1 : 0;
    if (!s.ok()) return FromStatus(s, err);
    if (r.found) {
      if (!CopyOut(r.key.data(), r.key.size(), found_key)) {
        return Fail(LT_EXCEPTION, "out of memory copying a result", err);
      }
      if (!CopyOut(r.value.data(), r.value.size(), found_value)) {
        std::free(found_key->data);
        return Fail(LT_EXCEPTION, "out of memory copying a result", err);
      }
      *found = 1;
    }
    return static_cast<int>(LT_OK);
  });
}

lt_iter* lt_table_iter_new(const lt_table* table, int verify_checksums) {
  try {
    leveldb::ReadOptions ro;
    ro.verify_checksums = verify_checksums != 0;
    std::unique_ptr<lt_iter> it(new lt_iter);
    it->iter.reset(table->table->NewIterator(ro));
    it->bundle = &table->bundle;
    return it.release();
  } catch (...) {
    return nullptr;
  }
}

void lt_iter_free(lt_iter* iter) { delete iter; }

int lt_iter_valid(const lt_iter* iter) { return iter->iter->Valid() ? 1 : 0; }

void lt_iter_seek_to_first(lt_iter* iter) { iter->iter->SeekToFirst(); }

void lt_iter_seek_to_last(lt_iter* iter) { iter->iter->SeekToLast(); }

int lt_iter_seek(lt_iter* iter, const uint8_t* key, size_t key_len,
                 char** err) {
  return Guard(err, [&] {
    const Slice k = AsSlice(key, key_len);
    int code = iter->bundle->CheckKey(k, err);
    if (code != LT_OK) return code;
    iter->iter->Seek(k);
    return static_cast<int>(LT_OK);
  });
}

// Next and Prev require a valid iterator (LevelDB asserts it).
void lt_iter_next(lt_iter* iter) {
  if (iter->iter->Valid()) iter->iter->Next();
}

void lt_iter_prev(lt_iter* iter) {
  if (iter->iter->Valid()) iter->iter->Prev();
}

const uint8_t* lt_iter_key(const lt_iter* iter, size_t* len) {
  if (!iter->iter->Valid()) {
    *len = 0;
    return nullptr;
  }
  const Slice k = iter->iter->key();
  *len = k.size();
  return reinterpret_cast<const uint8_t*>(k.data());
}

const uint8_t* lt_iter_value(const lt_iter* iter, size_t* len) {
  if (!iter->iter->Valid()) {
    *len = 0;
    return nullptr;
  }
  const Slice v = iter->iter->value();
  *len = v.size();
  return reinterpret_cast<const uint8_t*>(v.data());
}

int lt_iter_status(const lt_iter* iter, char** err) {
  return Guard(err, [&] { return FromStatus(iter->iter->status(), err); });
}

int lt_read_block(const uint8_t* data, size_t len, uint64_t offset,
                  uint64_t size, int verify_checksums, lt_bytes* out,
                  char** err) {
  return Guard(err, [&] {
    // ReadBlock allocates size + 5 bytes before reading; a size larger than
    // the file would be a truncated read anyway.
    if (size > len || size > SIZE_MAX - kTrailerSize) {
      return Fail(LT_CORRUPTION, "Corruption: truncated block read", err);
    }
    CountingFile file(std::string(reinterpret_cast<const char*>(data), len));
    leveldb::ReadOptions ro;
    ro.verify_checksums = verify_checksums != 0;
    leveldb::BlockHandle handle;
    handle.set_offset(offset);
    handle.set_size(size);
    leveldb::BlockContents contents;
    Status s = leveldb::ReadBlock(&file, ro, handle, &contents);
    if (!s.ok()) return FromStatus(s, err);
    int code = CopyOutOr(contents.data.data(), contents.data.size(), out, err);
    if (contents.heap_allocated) delete[] contents.data.data();
    return code;
  });
}

}  // extern "C"
