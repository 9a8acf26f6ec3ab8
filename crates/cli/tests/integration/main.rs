//! The integration tests of `leveltable-cli`, one module per concern, built as one binary.

mod common;
mod tmpfs;

mod audit;
mod changing_files;
mod chromium;
mod commands;
mod db;
mod db_commit_errors;
mod db_dedup;
mod db_export;
mod db_lies;
mod db_messages;
mod db_repair;
mod db_signals;
mod db_watch;
mod db_watch_strace;
mod db_write;
mod db_write_guards;
mod errors;
mod install;
mod internal;
mod mojang;
mod numeric_flags;
mod object;
mod out_paths;
mod output_errors;
mod progress;
mod signals;
mod sort_memory;
mod special_files;
mod table_memory;
