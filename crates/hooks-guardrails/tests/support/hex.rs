//! A run of hex with no break, shared by the step-count test and the bench.

/// `n` random lowercase hex digits (a fixed xorshift sequence): a blob, joined hashes.
pub(crate) fn hex_run(n: usize) -> String {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b"0123456789abcdef"[(x >> 60) as usize])
        })
        .collect()
}
