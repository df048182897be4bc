//! The proxy served on 127.0.0.1 and driven by real clients: HTTP CONNECT, plain HTTP, SOCKS5,
//! large transfers, and Python's urllib. Names are mapped to 127.0.0.1 by resolver overrides, so
//! no test reaches any other address.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns unwrap too

mod connect;
mod plain_http;
mod python;
mod refusals;
mod socks;
mod support;
mod transfer;
