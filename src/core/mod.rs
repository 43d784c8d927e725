//! The bottom layer: what every other layer may use and that uses nothing of
//! the crate above it — the result document, option tables and their values,
//! named units, signal handling and wall-clock time.

pub mod accounting;
pub mod fatal;
pub mod observer;
pub mod options;
pub mod result;
pub mod series;
pub mod signals;
pub mod start_at;
pub mod text;
pub mod time;
pub mod units;
