//! The passes every pattern shares, one file each, run in this order after
//! the pattern's own rewrite: the init block, learning-rate scaling (and of
//! the rate changers that would undo it), per-rank seeds, one distribution
//! scheme, removal of the user's device pinning, and rank-0 guards. The loop-step division, sharding and the one-time broadcast
//! are called by the patterns on the loop they found.

pub mod agreed_stops;
pub mod arrays;
pub mod bound_uses;
pub mod broadcast;
pub mod cached_file;
pub mod cursor_share;
pub mod device_pinning;
pub mod downloads;
pub mod end_of_data;
pub mod episodes;
pub mod epochs;
pub mod fits_driven;
pub mod graph_input;
pub mod init_block;
pub mod learning_rate;
pub mod loaded_splits;
pub mod loop_steps;
pub mod loops_driven;
pub mod rank_zero;
pub mod rate_changers;
pub mod read_barrier;
pub mod same_batches;
pub mod schedule_steps;
pub mod seeds;
pub mod set_order;
pub mod shard_placement;
pub mod sharding;
pub mod shared_writes;
pub mod shell_lines;
pub mod shown_counters;
pub mod shuffled_pipeline;
pub mod strategies;

use crate::diagnostics::Code;

/// The codes the shared passes raise.
pub fn codes() -> Vec<Code> {
    [
        agreed_stops::CODES,
        device_pinning::CODES,
        downloads::CODES,
        learning_rate::CODES,
        loop_steps::CODES,
        rank_zero::CODES,
        rate_changers::CODES,
        read_barrier::CODES,
        schedule_steps::CODES,
        seeds::CODES,
        set_order::CODES,
        sharding::CODES,
        shell_lines::CODES,
        strategies::CODES,
    ]
    .concat()
}
