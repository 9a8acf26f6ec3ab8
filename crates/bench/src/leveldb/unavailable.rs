//! Stand-ins when the build found no LevelDB: every workload is [`Error::Unavailable`].

use std::path::Path;

use super::{Error, Records, Result};

pub fn hash_slices(_data: &[u8], _slice: usize, _seed: u32) -> Result<u32> {
    Err(Error::Unavailable)
}

pub fn cli_get(_path: &Path) -> Result<i32> {
    Err(Error::Unavailable)
}

pub fn cli_build(_path: &Path) -> Result<()> {
    Err(Error::Unavailable)
}

pub fn cli_db_write(_dir: &Path, _batch: u32, _sync: bool) -> Result<()> {
    Err(Error::Unavailable)
}

#[derive(Debug)]
pub struct Bloom(());

impl Bloom {
    pub fn new(_bits_per_key: usize) -> Result<Self> {
        Err(Error::Unavailable)
    }
    pub fn create_batches(&self, _keys: Records<'_>, _batch: usize) -> usize {
        unreachable!("no Bloom exists without LevelDB")
    }
    pub fn create(&self, _keys: Records<'_>) -> Vec<u8> {
        unreachable!("no Bloom exists without LevelDB")
    }
    pub fn matches(&self, _filter: &[u8], _queries: Records<'_>) -> usize {
        unreachable!("no Bloom exists without LevelDB")
    }
    pub fn filter_block_build(
        &self,
        _keys: Records<'_>,
        _offsets: &[u64],
        _starts: &[usize],
    ) -> usize {
        unreachable!("no Bloom exists without LevelDB")
    }
    pub fn filter_block_match(
        &self,
        _block: &[u8],
        _queries: Records<'_>,
        _offsets: &[u64],
    ) -> usize {
        unreachable!("no Bloom exists without LevelDB")
    }
}

#[derive(Debug)]
pub struct TableBuilder(());

impl TableBuilder {
    pub fn create(_path: &Path, _snappy: bool, _bloom_bits: usize) -> Result<Self> {
        Err(Error::Unavailable)
    }
    pub fn add(&mut self, _keys: Records<'_>, _values: Records<'_>) -> Result<()> {
        Err(Error::Unavailable)
    }
    pub fn finish(self) -> Result<u64> {
        Err(Error::Unavailable)
    }
}

#[derive(Debug)]
pub struct Table(());

impl Table {
    pub fn open(_path: &Path, _bloom_bits: usize, _cache_bytes: usize) -> Result<Self> {
        Err(Error::Unavailable)
    }
    pub fn gets(&mut self, _queries: Records<'_>, _verify: bool) -> Result<(u64, u64)> {
        Err(Error::Unavailable)
    }
    pub fn scan(&mut self, _verify: bool) -> Result<(u64, u64)> {
        Err(Error::Unavailable)
    }
    pub fn gets_threads(&mut self, _queries: Records<'_>, _threads: usize) -> Result<(u64, u64)> {
        Err(Error::Unavailable)
    }
    pub fn scan_threads(&mut self, _threads: usize) -> Result<(u64, u64)> {
        Err(Error::Unavailable)
    }
}

#[derive(Debug)]
pub struct Db(());

impl Db {
    pub fn open(
        _path: &Path,
        _bloom_bits: usize,
        _cache_bytes: usize,
        _verify: bool,
        _create: bool,
    ) -> Result<Self> {
        Err(Error::Unavailable)
    }
    pub fn write(&mut self, _keys: Records<'_>, _values: Records<'_>, _batch: usize) -> Result<()> {
        Err(Error::Unavailable)
    }
    pub fn settle(&mut self, _timeout_ms: u64) -> Result<[u64; 7]> {
        Err(Error::Unavailable)
    }
    pub fn compact_all(&mut self) -> Result<()> {
        Err(Error::Unavailable)
    }
    pub fn gets(&mut self, _queries: Records<'_>) -> Result<(u64, u64)> {
        Err(Error::Unavailable)
    }
    pub fn scan(&mut self) -> Result<(u64, u64)> {
        Err(Error::Unavailable)
    }
}

#[derive(Debug)]
pub struct WriteDb(());

impl WriteDb {
    pub fn open(_path: &Path) -> Result<Self> {
        Err(Error::Unavailable)
    }
    pub fn put(
        &self,
        _keys: Records<'_>,
        _ring: Records<'_>,
        _first: u64,
        _sync: bool,
    ) -> Result<()> {
        Err(Error::Unavailable)
    }
    pub fn delete(&self, _keys: Records<'_>, _sync: bool) -> Result<()> {
        Err(Error::Unavailable)
    }
    pub fn gets(&self, _keys: Records<'_>) -> Result<(u64, u64)> {
        Err(Error::Unavailable)
    }
    pub fn scan(&self) -> Result<(u64, u64)> {
        Err(Error::Unavailable)
    }
    pub fn settle(&self, _timeout_ms: u64) -> Result<()> {
        Err(Error::Unavailable)
    }
}
