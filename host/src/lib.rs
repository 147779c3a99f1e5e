//! gantry host library.
