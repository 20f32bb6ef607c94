//! Graph passes: each rewrites the IR and keeps outputs unchanged. One pass, one file.

mod fold_constants;
mod remove_dead_nodes;

pub use fold_constants::fold_constants;
pub use remove_dead_nodes::remove_dead_nodes;

use crate::error::Result;
use crate::graph::Graph;

/// The passes every engine build runs, in order, with their names (for `inspect --passes`).
pub fn default_passes() -> Vec<(&'static str, fn(&mut Graph) -> Result<usize>)> {
    vec![("fold_constants", fold_constants), ("remove_dead_nodes", remove_dead_nodes)]
}
