#![doc = include_str!("../README.md")]

mod fs;
mod image;
mod trace;

pub use fs::PowerLossFs;
pub use image::{Image, Variant};
pub use trace::{Event, Trace};
