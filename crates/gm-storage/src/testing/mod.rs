//! Test support: the S3 and HTTP test servers, and [`FaultServer`], an in-process HTTP server
//! that injects failures.
//!
//! Tests that need a test server print `SKIP (no S3 test server): <name>` and pass when it is
//! not installed (`cargo xtask test` installs it and names it in `GM_MOTO_SERVER` and
//! `GM_RANGE_HTTP`); with `GM_REQUIRE_S3=1` (set by `.ci/run`) they fail instead.

mod fault;
mod http;
mod servers;

pub use fault::{Fault, FaultServer};
pub use servers::{
    REQUIRE_S3_VAR, RangeHttpServer, S3Server, TestBucket, range_http_or_skip, s3_or_skip,
};
