//! Fixed-width bit sets: what `BB(x, n)` draws and what a `bits` payload field holds.

use std::fmt;

/// A fixed-width set of bits, bit `i` being lane `i` (as Python's `int` masks and little-endian `bitarray`s).
/// Words are little-endian (bit `i` is bit `i mod 64` of word `i / 64`); bits at and above `len` are always 0.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct BitMask {
    len: usize,
    words: Vec<u64>,
}

pub(crate) fn words_for(len: usize) -> usize {
    len.div_ceil(64)
}

impl BitMask {
    /// `len` zero bits.
    pub fn new(len: usize) -> Self {
        BitMask { len, words: vec![0; words_for(len)] }
    }

    /// A mask of `len` bits from its words (bits at and above `len` are cleared).
    pub fn from_words(len: usize, mut words: Vec<u64>) -> Self {
        words.resize(words_for(len), 0);
        let mut m = BitMask { len, words };
        m.trim();
        m
    }

    /// A mask with the single bit `i` set.
    pub fn single(len: usize, i: usize) -> Self {
        let mut m = BitMask::new(len);
        m.set(i, true);
        m
    }

    /// The low `len` (≤ 64) bits of `value`.
    pub fn from_u64(len: usize, value: u64) -> Self {
        assert!(len <= 64, "from_u64 takes at most 64 bits");
        BitMask::from_words(len, vec![value])
    }

    /// The mask of the `0`/`1` text `bits` (character `i` is bit `i`), or `None` for another character.
    pub fn parse(bits: &str) -> Option<Self> {
        let mut m = BitMask::new(bits.len());
        for (i, c) in bits.bytes().enumerate() {
            match c {
                b'1' => m.set(i, true),
                b'0' => {}
                _ => return None,
            }
        }
        Some(m)
    }

    pub(crate) fn trim(&mut self) {
        let rem = self.len & 63;
        if rem != 0 {
            if let Some(last) = self.words.last_mut() {
                *last &= (1u64 << rem) - 1;
            }
        }
    }

    /// The number of bits.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mask has no bits at all.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The words, little-endian.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    pub(crate) fn words_mut(&mut self) -> &mut [u64] {
        &mut self.words
    }

    /// Bit `i` (panics past the end).
    pub fn get(&self, i: usize) -> bool {
        assert!(i < self.len, "bit {i} of a {}-bit mask", self.len);
        (self.words[i >> 6] >> (i & 63)) & 1 != 0
    }

    /// Sets bit `i` to `value` (panics past the end).
    pub fn set(&mut self, i: usize, value: bool) {
        assert!(i < self.len, "bit {i} of a {}-bit mask", self.len);
        let bit = 1u64 << (i & 63);
        if value {
            self.words[i >> 6] |= bit;
        } else {
            self.words[i >> 6] &= !bit;
        }
    }

    /// Flips bit `i` (panics past the end).
    pub fn flip(&mut self, i: usize) {
        assert!(i < self.len, "bit {i} of a {}-bit mask", self.len);
        self.words[i >> 6] ^= 1u64 << (i & 63);
    }

    /// The number of set bits.
    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    fn combine(&self, o: &BitMask, f: impl Fn(u64, u64) -> u64) -> BitMask {
        assert_eq!(o.len, self.len, "masks of {} and {} bits", self.len, o.len);
        let words = self.words.iter().zip(&o.words).map(|(&a, &b)| f(a, b)).collect();
        BitMask { len: self.len, words }
    }

    /// `self AND o`.
    pub fn and(&self, o: &BitMask) -> BitMask {
        self.combine(o, |a, b| a & b)
    }

    /// `self OR o`.
    pub fn or(&self, o: &BitMask) -> BitMask {
        self.combine(o, |a, b| a | b)
    }

    /// `self XOR o`.
    pub fn xor(&self, o: &BitMask) -> BitMask {
        self.combine(o, |a, b| a ^ b)
    }

    /// `self AND NOT o`.
    pub fn and_not(&self, o: &BitMask) -> BitMask {
        self.combine(o, |a, b| a & !b)
    }

    /// The `bits` field text: `len` characters `0`/`1`, character `i` being bit `i`.
    pub fn to_bit_string(&self) -> String {
        let mut out = String::with_capacity(self.len);
        self.write_bits(&mut out);
        out
    }

    pub(crate) fn write_bits(&self, out: &mut String) {
        out.reserve(self.len);
        for (w, &word) in self.words.iter().enumerate() {
            let n = (self.len - 64 * w).min(64);
            for b in 0..n {
                out.push(if (word >> b) & 1 != 0 { '1' } else { '0' });
            }
        }
    }

    /// The indices of the set bits, lowest first.
    pub fn ones(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.count_ones());
        for (w, &word) in self.words.iter().enumerate() {
            let mut word = word;
            while word != 0 {
                out.push(64 * w + word.trailing_zeros() as usize);
                word &= word - 1;
            }
        }
        out
    }
}

impl fmt::Debug for BitMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BitMask({})", self.to_bit_string())
    }
}
