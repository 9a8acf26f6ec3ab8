//! Tables stored with every codec, read under every profile: the entries come back under
//! the profiles that know the type byte, the others say which type they do not know, and
//! damaged compressed blocks are errors, never a wrong value or a panic.

use leveltable_table::format::{BlockTrailer, block_checksum, mask_crc};
use leveltable_table::{
    BuildOptions, Compression, Error, Profile, ReadOptions, Table, TableBuilder, codec,
};

fn entries() -> Entries {
    (0..3000u32)
        .map(|i| {
            // Bedrock-like keys: chunk x, z (little-endian), a tag, a sub-chunk index.
            let mut key = Vec::new();
            key.extend_from_slice(&(i / 40).to_le_bytes());
            key.extend_from_slice(&(i % 40).to_le_bytes());
            key.push(0x2f);
            key.push((i % 7) as u8);
            let value = format!("palette {} blocks {}", i % 13, i).repeat(1 + (i % 5) as usize);
            (key, value.into_bytes())
        })
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect()
}

fn build(compression: Compression, block_size: usize) -> Vec<u8> {
    let options = BuildOptions::default()
        .compression(compression)
        .block_size(block_size);
    let mut b = TableBuilder::new(Vec::new(), options).unwrap();
    for (k, v) in entries() {
        b.add(&k, &v).unwrap();
    }
    b.finish().unwrap();
    b.into_inner()
}

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn scan(bytes: Vec<u8>, options: ReadOptions) -> Result<Entries, Error> {
    let table = Table::open(bytes, options)?;
    table.entries().collect()
}

/// The profile that writes `compression` (Mojang's for the shared codecs).
fn writer_profile(compression: Compression) -> Profile {
    match compression {
        Compression::Zstd => Profile::LevelDb,
        _ => Profile::Mojang,
    }
}

#[test]
fn every_codec_reads_back_under_auto_and_its_writers_profile() {
    for compression in Compression::ALL {
        if !compression.is_available() {
            continue;
        }
        let bytes = build(compression, 4096);
        // The first data block's trailer names the codec.
        let size = {
            let mut all = Vec::new();
            for profile in [Profile::Auto, writer_profile(compression)] {
                let options = ReadOptions::default().profile(profile);
                let got = scan(bytes.clone(), options).unwrap();
                assert_eq!(got, entries(), "{compression:?} under {profile}");
                all.push(got.len());
            }
            all[0]
        };
        assert_eq!(size, entries().len());
        if compression != Compression::None {
            // Compressed blocks are smaller than the entries they hold.
            assert!(bytes.len() < 100_000, "{compression:?}: {}", bytes.len());
        }
    }
}

#[test]
fn the_wrong_profile_names_the_type_it_does_not_know() {
    for (compression, profile, want) in [
        (
            Compression::RawDeflate,
            Profile::LevelDb,
            "table: unsupported block compression type 4 at offset",
        ),
        (
            Compression::ZstdMojang,
            Profile::LevelDb,
            "table: unsupported block compression type 3 at offset",
        ),
        // Type 2 under the other family's meaning: the codec says the bytes are not its own.
        (
            Compression::Zlib,
            Profile::LevelDb,
            "table: corrupt zstd block contents (type 2, profile leveldb) at offset",
        ),
        (
            Compression::Zstd,
            Profile::Mojang,
            "table: corrupt zlib block contents (type 2, profile mojang) at offset",
        ),
    ] {
        if !compression.is_available() {
            continue;
        }
        let other = if compression == Compression::Zlib {
            Compression::Zstd
        } else {
            Compression::Zlib
        };
        if !other.is_available() && want.contains("corrupt") {
            continue;
        }
        let err = scan(
            build(compression, 4096),
            ReadOptions::default().profile(profile),
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with(want), "{compression:?}: {err}");
        if want.contains("unsupported") {
            assert!(err.ends_with("(profile leveldb; known to profiles: mojang, auto)"));
        }
    }
}

#[test]
fn missing_codecs_are_named_with_their_feature() {
    for compression in Compression::ALL {
        if compression.is_available() {
            continue;
        }
        let err = TableBuilder::new(Vec::new(), BuildOptions::default().compression(compression))
            .err()
            .unwrap();
        let feature = compression.feature().unwrap();
        assert!(
            err.to_string().contains(&format!("`{feature}` feature")),
            "{err}"
        );
    }
}

/// Rewrites the trailer of the block at `offset..offset + size` to match its bytes.
fn reseal(bytes: &mut [u8], offset: usize, size: usize) {
    let block_type = bytes[offset + size];
    let t = BlockTrailer {
        block_type,
        masked_crc: mask_crc(block_checksum(&bytes[offset..offset + size], block_type)),
    };
    bytes[offset + size..offset + size + 5].copy_from_slice(&t.to_bytes());
}

#[test]
fn bit_flips_in_compressed_blocks_are_errors_never_wrong_values() {
    for compression in Compression::ALL {
        if !compression.is_available() || compression == Compression::None {
            continue;
        }
        let good = build(compression, 16 << 10);
        let table = Table::open(good.clone(), ReadOptions::default()).unwrap();
        let data_end = table.properties().footer.metaindex.offset as usize;
        let first_size =
            table.properties().data_size as usize / table.properties().data_blocks as usize;
        drop(table);
        let want = entries();
        let mut flips = 0;
        let mut position = 0;
        while position < data_end {
            {
                let bit = position % 8;
                let mut bad = good.clone();
                bad[position] ^= 1 << bit;
                // Checked: the crc catches every flip.
                let got = scan(bad.clone(), ReadOptions::default());
                assert!(got.is_err(), "{compression:?} flip at {position}");
                // Unchecked: an error or (for codecs without a checksum of their own) some
                // entries, but no panic.
                let _ = scan(bad, ReadOptions::default().verify_checksums(false));
                flips += 1;
            }
            position += 211;
        }
        assert!(flips > 10, "{compression:?}");
        // Resealed flips inside the first block: the crc passes, so the codec or the block
        // format must object, or the flip landed where it changes nothing we compare.
        let mut resealed_errors = 0;
        for position in (0..first_size.min(data_end)).step_by(13) {
            let mut bad = good.clone();
            bad[position] ^= 0x10;
            let size = first_block_size(&good);
            if position >= size {
                break;
            }
            reseal(&mut bad, 0, size);
            match scan(bad, ReadOptions::default()) {
                Err(_) => resealed_errors += 1,
                // zlib carries an Adler-32 of its output: what passes is the right output.
                Ok(got) if compression == Compression::Zlib => {
                    assert_eq!(got, want, "{compression:?} resealed flip at {position}");
                }
                Ok(_) => {}
            }
        }
        assert!(resealed_errors > 0, "{compression:?}");
    }
}

/// The stored size of the first data block (at offset 0): the second block starts right
/// after it and its 5-byte trailer.
fn first_block_size(bytes: &[u8]) -> usize {
    let table = Table::open(bytes.to_vec(), ReadOptions::default()).unwrap();
    let second = entries()
        .iter()
        .map(|(k, _)| table.data_block_offset_for(k).unwrap().unwrap())
        .find(|&at| at != 0)
        .unwrap();
    second as usize - 5
}

/// A zstd frame claiming 2^40 bytes, one RLE block long (17 bytes), padded with a skippable
/// frame to `len` bytes.
fn zstd_bomb(len: usize) -> Vec<u8> {
    let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd];
    // Frame header descriptor: 8-byte content size, single segment.
    frame.push(0xe0);
    frame.extend_from_slice(&(1u64 << 40).to_le_bytes());
    // Block header: last block, RLE, 128 KiB; then the byte repeated.
    let header: u32 = 1 | (1 << 1) | (131_072 << 3);
    frame.extend_from_slice(&header.to_le_bytes()[..3]);
    frame.push(0);
    if len == frame.len() {
        return frame;
    }
    let pad = len - frame.len() - 8;
    frame.extend_from_slice(&[0x50, 0x2a, 0x4d, 0x18]);
    frame.extend_from_slice(&(pad as u32).to_le_bytes());
    frame.resize(len, 0xaa);
    frame
}

#[test]
fn a_zstd_bomb_in_a_block_is_an_error_not_an_allocation() {
    if !Compression::Zstd.is_available() {
        return;
    }
    let mut bad = build(Compression::Zstd, 4096);
    let size = first_block_size(&bad);
    bad[..size].copy_from_slice(&zstd_bomb(size));
    reseal(&mut bad, 0, size);
    let err = scan(bad, ReadOptions::default()).unwrap_err().to_string();
    assert!(
        err.starts_with("table: corrupt zstd block") && err.ends_with("at offset 0"),
        "{err}"
    );
    // The same frame alone declares its size: refused before anything is allocated.
    let mut out = Vec::new();
    assert!(codec::decompress(Compression::Zstd, &zstd_bomb(17), &mut out).is_err());
    assert_eq!(out.capacity(), 0);
}

#[test]
fn scans_restarted_after_each_key_read_the_same_with_readahead() {
    // As a binding reads in chunks: a new range after the last key of each chunk.
    for compression in [
        Compression::RawDeflate,
        Compression::Zstd,
        Compression::Snappy,
    ] {
        if !compression.is_available() {
            continue;
        }
        let bytes = build(compression, 16 << 10);
        for readahead in [0, 1, 8] {
            let table = Table::open(
                bytes.clone(),
                ReadOptions::default().readahead_blocks(readahead),
            )
            .unwrap();
            let mut got = Vec::new();
            let mut last: Option<Vec<u8>> = None;
            loop {
                let start = match &last {
                    Some(k) => std::ops::Bound::Excluded(k.clone()),
                    None => std::ops::Bound::Unbounded,
                };
                let chunk: Vec<_> = table
                    .range::<Vec<u8>>((start, std::ops::Bound::Unbounded))
                    .take(100)
                    .map(Result::unwrap)
                    .collect();
                if chunk.is_empty() {
                    break;
                }
                last = Some(chunk.last().unwrap().0.clone());
                got.extend(chunk);
                assert!(got.len() <= entries().len(), "{compression:?} {readahead}");
            }
            assert_eq!(got, entries(), "{compression:?} readahead {readahead}");
        }
    }
}
