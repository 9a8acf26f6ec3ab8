// Writes the zstd golden files with LevelDB's main branch (kZstdCompression, type 2), and
// what LevelDB itself reads back from them. See README.md for the build steps.
//
//   table_zstd.ldb        a table: 1000 entries, 4 KiB blocks, Bloom filter 10 bits/key
//   table_zstd.tsv        its entries as LevelDB's table iterator returns them (hex)
//   db/                   a database: puts, overwrites, deletions, a compaction, and writes
//                         left in the log
//   db.tsv                the database's live entries as LevelDB's iterator returns them

#include <cstdio>
#include <memory>
#include <string>

#include "leveldb/db.h"
#include "leveldb/env.h"
#include "leveldb/filter_policy.h"
#include "leveldb/iterator.h"
#include "leveldb/options.h"
#include "leveldb/table.h"
#include "leveldb/table_builder.h"

namespace {

void Check(const leveldb::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

std::string Hex(const leveldb::Slice& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    unsigned char c = s[i];
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::string Key(int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "key%06d", i);
  return buf;
}

// Compressible, varied values; every 199th is about 5 KB, larger than a block.
std::string Value(int i) {
  std::string v = "value " + std::to_string(i) + " ";
  int repeat = (i % 199 == 0) ? 400 : 1 + i % 7;
  std::string out;
  for (int r = 0; r < repeat; r++) out += v;
  return out;
}

void Dump(leveldb::Iterator* it, const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::fprintf(f, "%s\t%s\n", Hex(it->key()).c_str(), Hex(it->value()).c_str());
  }
  Check(it->status(), "iterate");
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : ".";
  leveldb::Env* env = leveldb::Env::Default();
  std::unique_ptr<const leveldb::FilterPolicy> bloom(leveldb::NewBloomFilterPolicy(10));

  leveldb::Options options;
  options.compression = leveldb::kZstdCompression;
  options.filter_policy = bloom.get();

  {
    leveldb::WritableFile* file;
    std::string path = dir + "/table_zstd.ldb";
    Check(env->NewWritableFile(path, &file), "create table");
    leveldb::TableBuilder builder(options, file);
    for (int i = 0; i < 1000; i++) builder.Add(Key(i), Value(i));
    Check(builder.Finish(), "finish table");
    Check(file->Sync(), "sync");
    Check(file->Close(), "close");
    delete file;

    leveldb::RandomAccessFile* in;
    uint64_t size;
    Check(env->NewRandomAccessFile(path, &in), "open table");
    Check(env->GetFileSize(path, &size), "size");
    leveldb::Table* table;
    leveldb::ReadOptions read;
    read.verify_checksums = true;
    Check(leveldb::Table::Open(options, in, size, &table), "open table");
    std::unique_ptr<leveldb::Iterator> it(table->NewIterator(read));
    Dump(it.get(), dir + "/table_zstd.tsv");
    it.reset();
    delete table;
    delete in;
  }

  {
    std::string path = dir + "/db";
    options.create_if_missing = true;
    options.error_if_exists = true;
    options.write_buffer_size = 16 << 10;  // several tables from few entries
    leveldb::DB* db;
    Check(leveldb::DB::Open(options, path, &db), "open db");
    leveldb::WriteOptions write;
    for (int i = 0; i < 1500; i++) Check(db->Put(write, Key(i), Value(i)), "put");
    for (int i = 0; i < 1500; i += 3) Check(db->Put(write, Key(i), "overwritten " + Value(i)), "put");
    for (int i = 0; i < 1500; i += 10) Check(db->Delete(write, Key(i)), "delete");
    db->CompactRange(nullptr, nullptr);
    // Left in the log: the newest writes, a deletion of a compacted key, a key re-added.
    for (int i = 1500; i < 1600; i++) Check(db->Put(write, Key(i), Value(i)), "put");
    Check(db->Delete(write, Key(1)), "delete");
    Check(db->Put(write, Key(10), "back again"), "put");
    leveldb::ReadOptions read;
    read.verify_checksums = true;
    std::unique_ptr<leveldb::Iterator> it(db->NewIterator(read));
    Dump(it.get(), dir + "/db.tsv");
    it.reset();
    delete db;
  }
  return 0;
}
