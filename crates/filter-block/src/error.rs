use core::fmt;

/// What a [`FilterBlockBuilder`](crate::FilterBlockBuilder) refuses to do.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// `start_block` was called with an offset whose filter precedes one already generated.
    /// Data blocks must be started in file order.
    OffsetBackwards {
        /// The offset passed to `start_block`.
        offset: u64,
        /// The lowest offset `start_block` still accepts.
        min: u64,
    },
    /// `start_block` was called with an offset at or past
    /// [`MAX_BLOCK_OFFSET`](crate::MAX_BLOCK_OFFSET); reaching it would take one empty
    /// filter per 2 KiB skipped.
    OffsetTooLarge {
        /// The offset passed to `start_block`.
        offset: u64,
        /// The limit it broke.
        max: u64,
    },
    /// The filters grew past what the block's 32-bit offsets can address.
    TooLarge {
        /// Bytes of filter data when the limit was hit.
        size: u64,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::OffsetBackwards { offset, min } => write!(
                f,
                "filter block: block offset {offset} goes backwards (must be at least {min})"
            ),
            Error::OffsetTooLarge { offset, max } => write!(
                f,
                "filter block: block offset {offset} is beyond the supported limit {max}"
            ),
            Error::TooLarge { size } => write!(
                f,
                "filter block: {size} bytes of filters exceed the 4 GiB the block can address"
            ),
        }
    }
}

impl core::error::Error for Error {}

/// The result type of this crate.
pub type Result<T> = core::result::Result<T, Error>;
