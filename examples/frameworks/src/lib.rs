//! Shared parts of the framework examples and tests: a labelled JPEG dataset that a small
//! network can learn, the CNN the candle example trains, and step timing.
#![allow(missing_docs)] // an examples crate, not published

pub mod cnn;
pub mod patterns;
pub mod timing;
