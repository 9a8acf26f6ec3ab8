#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod async_table;
mod blocking;
mod connector;
mod error;
mod http_listing;
mod location;
mod options;
mod prefix;
mod read_at;
mod remote;
mod retry;
mod runtime;
mod stats;
mod tail;
mod upload;

pub use async_table::{AsyncTable, Entry};
pub use blocking::{BlockingRange, BlockingTable};
pub use connector::MAX_REDIRECTS;
pub use error::{Error, Result};
pub use location::{Location, is_url};
pub use object_store;
pub use options::ObjectReadOptions;
pub use prefix::{PrefixStorage, open_db, upload_db};
pub use read_at::ObjectReadAt;
pub use remote::RemoteObject;
pub use retry::RetryPolicy;
pub use stats::{Stats, StatsSnapshot};
pub use tail::TailSource;
pub use upload::{DEFAULT_PART_SIZE, ObjectTableBuilder, ObjectWriter, object_exists};
