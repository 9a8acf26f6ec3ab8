//! What the server tests share: the servers, started on loopback ports and stopped on drop,
//! the fault-injecting proxy, and tables to read.

#![allow(dead_code)]

pub mod canned;
pub mod proxy;
pub mod servers;
pub mod tables;
