//! The integration tests of `leveltable-object`, one module per concern, built as one binary.

mod common;

mod bounds;
mod db;
mod faults;
mod pinning;
mod redirects;
mod servers;
mod urls;
