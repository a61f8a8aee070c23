//! Blob compression as independent zstd frames, compressed and decompressed on every core.
//!
//! A large output is cut into frames of [`FRAME_BYTES`]; each frame records its content size and
//! a checksum, so frames can be decoded in parallel straight into their place in the output and
//! corruption is caught per frame. A sequence of frames is itself valid zstd: older single-frame
//! blobs and any standard zstd tool read them.

use std::io;

use zstd::bulk::{Compressor, Decompressor};
use zstd::zstd_safe::{self, CParameter};

/// Bytes of input per frame: large enough to compress well, small enough to spread 1 MB over
/// the cores.
pub(crate) const FRAME_BYTES: usize = 256 * 1024;

/// The cores this process may use (1 when unknown).
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn workers(jobs: usize) -> usize {
    cores().min(jobs).max(1)
}

pub(crate) fn compressor(level: i32) -> io::Result<Compressor<'static>> {
    let mut c = Compressor::new(level)?;
    c.set_parameter(CParameter::ChecksumFlag(true))?;
    c.set_parameter(CParameter::ContentSizeFlag(true))?;
    Ok(c)
}

/// A compressed frame and its position in the output.
type NumberedFrame = (usize, Vec<u8>);

/// Compresses `bytes` into a sequence of frames, in parallel when there are several.
pub(crate) fn compress(bytes: &[u8], level: i32) -> io::Result<Vec<u8>> {
    let chunks: Vec<&[u8]> = bytes.chunks(FRAME_BYTES).collect();
    if chunks.len() <= 1 {
        return compressor(level)?.compress(bytes);
    }
    let workers = workers(chunks.len());
    let chunks = &chunks;
    let parts: Vec<io::Result<Vec<NumberedFrame>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                scope.spawn(move || {
                    let mut c = compressor(level)?;
                    (w..chunks.len()).step_by(workers).map(|i| Ok((i, c.compress(chunks[i])?))).collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(io::Error::other("compression panicked"))))
            .collect()
    });
    let mut frames: Vec<NumberedFrame> = Vec::with_capacity(chunks.len());
    for part in parts {
        frames.extend(part?);
    }
    frames.sort_by_key(|(i, _)| *i);
    Ok(frames.into_iter().flat_map(|(_, f)| f).collect())
}

/// One frame: where it is in the compressed data and how many bytes it decodes to.
struct Frame<'a> {
    data: &'a [u8],
    size: usize,
}

fn frames(data: &[u8]) -> Option<Vec<Frame<'_>>> {
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let len = zstd_safe::find_frame_compressed_size(rest).ok()?;
        let size = zstd_safe::get_frame_content_size(rest).ok()??;
        let (frame, tail) = rest.split_at_checked(len)?;
        out.push(Frame { data: frame, size: usize::try_from(size).ok()? });
        rest = tail;
    }
    Some(out)
}

/// Whether the frames carry checksums (zstd then verifies each one as it decodes it). Blobs
/// written before frames had them do not.
pub(crate) fn has_checksums(data: &[u8]) -> bool {
    // Frame header: 4 magic bytes, then the descriptor; bit 2 is Content_Checksum_flag.
    data.get(..4) == Some(&zstd_safe::MAGICNUMBER.to_le_bytes()[..])
        && data.get(4).is_some_and(|d| d & 0x04 != 0)
}

/// Decompresses a sequence of frames that must decode to exactly `expected` bytes, in parallel
/// when there are several. Frames with checksums are verified as they are decoded.
pub(crate) fn decompress(data: &[u8], expected: usize) -> Result<Vec<u8>, String> {
    let frames = match frames(data) {
        Some(f) if f.len() > 1 => f,
        // One frame, or frames without content sizes (older blobs): decode in one go.
        _ => {
            let raw = zstd::bulk::decompress(data, expected).map_err(|e| e.to_string())?;
            return if raw.len() == expected { Ok(raw) } else { Err(size_mismatch(raw.len(), expected)) };
        }
    };
    let total: usize = frames.iter().map(|f| f.size).sum();
    if total != expected {
        return Err(size_mismatch(total, expected));
    }
    let mut out = vec![0u8; total];
    // Disjoint output slices, one per frame, dealt to the workers round-robin.
    let mut jobs: Vec<(&Frame<'_>, &mut [u8])> = Vec::with_capacity(frames.len());
    let mut rest: &mut [u8] = &mut out;
    for frame in &frames {
        let (slot, tail) = rest.split_at_mut(frame.size);
        jobs.push((frame, slot));
        rest = tail;
    }
    let workers = workers(jobs.len());
    let mut dealt: Vec<Vec<(&Frame<'_>, &mut [u8])>> = (0..workers).map(|_| Vec::new()).collect();
    for (i, job) in jobs.into_iter().enumerate() {
        dealt[i % workers].push(job);
    }
    let results: Vec<Result<(), String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = dealt
            .into_iter()
            .map(|batch| {
                scope.spawn(move || {
                    let mut d = Decompressor::new().map_err(|e| e.to_string())?;
                    for (frame, slot) in batch {
                        let n = d.decompress_to_buffer(frame.data, slot).map_err(|e| e.to_string())?;
                        if n != frame.size {
                            return Err(size_mismatch(n, frame.size));
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("decompression panicked".into())))
            .collect()
    });
    results.into_iter().collect::<Result<(), String>>()?;
    Ok(out)
}

fn size_mismatch(got: usize, expected: usize) -> String {
    format!("decoded {got} bytes where {expected} were stored")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8 ^ (i / 7919) as u8).collect()
    }

    #[test]
    fn round_trips_every_size_around_frame_boundaries() {
        for len in [0, 1, FRAME_BYTES - 1, FRAME_BYTES, FRAME_BYTES + 1, 4 * FRAME_BYTES + 17] {
            let raw = sample(len);
            let packed = compress(&raw, 3).unwrap();
            assert_eq!(decompress(&packed, len).unwrap(), raw, "len {len}");
        }
    }

    #[test]
    fn older_single_frame_blobs_still_decode() {
        let raw = sample(3 * FRAME_BYTES);
        let old = zstd::bulk::compress(&raw, 3).unwrap();
        assert!(!has_checksums(&old), "they need another integrity check");
        assert_eq!(decompress(&old, raw.len()).unwrap(), raw);
        assert!(has_checksums(&compress(&raw, 3).unwrap()));
        assert!(has_checksums(&compress(b"short", 3).unwrap()));
        assert!(!has_checksums(b""));
    }

    #[test]
    fn corruption_and_wrong_sizes_are_errors_not_panics() {
        let raw = sample(3 * FRAME_BYTES);
        let packed = compress(&raw, 3).unwrap();
        assert!(decompress(&packed, raw.len() + 1).is_err());
        let mut flipped = packed.clone();
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0x55;
        assert!(decompress(&flipped, raw.len()).is_err_and(|e| !e.is_empty()));
        assert!(decompress(&packed[..packed.len() - 3], raw.len()).is_err());
        assert!(decompress(b"not zstd at all", 10).is_err());
    }
}
