//! completion
