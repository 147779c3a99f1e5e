//! gantry host library.

pub mod dag;
