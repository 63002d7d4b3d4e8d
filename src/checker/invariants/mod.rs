//! The invariants of a correct Horovod program, one file each, in the order
//! a reader checks a distributed program: Horovod is started before it is
//! used, every gradient is averaged, the initial state is shared, the work
//! is split once and the rate follows the split, workers see different data,
//! rank 0 alone writes, every rank issues the same collectives, the generated
//! calls exist, only training is rewritten, and each worker has its GPU.

mod api_exists;
mod collectives_aligned;
mod conditional_steps;
mod constant_start;
mod data_differs;
mod device_pinned;
pub mod facts;
mod fetched_modules;
mod gradients_averaged;
mod handed_steps;
mod init_before_use;
mod only_training;
mod random_lengths;
mod rank_zero_writes;
mod rate_follows_split;
mod reads_overtaken;
mod state_broadcast;
mod warmup_gates;
mod work_split;

pub use api_exists::API_EXISTS;
pub use collectives_aligned::COLLECTIVES_ALIGNED;
pub use data_differs::DATA_DIFFERS;
pub use device_pinned::DEVICE_PINNED;
pub use gradients_averaged::GRADIENTS_AVERAGED;
pub use init_before_use::INIT_BEFORE_USE;
pub use only_training::ONLY_TRAINING;
pub use rank_zero_writes::RANK_ZERO_WRITES;
pub use rate_follows_split::RATE_FOLLOWS_SPLIT;
pub use state_broadcast::STATE_BROADCAST;
pub use work_split::WORK_SPLIT;

use super::Invariant;

/// Every invariant, in the order of SPEC 13.1.
pub static ALL: &[&dyn Invariant] = &[
    &init_before_use::InitBeforeUse,
    &gradients_averaged::GradientsAveraged,
    &state_broadcast::StateBroadcast,
    &work_split::WorkSplit,
    &rate_follows_split::RateFollowsSplit,
    &data_differs::DataDiffers,
    &rank_zero_writes::RankZeroWrites,
    &collectives_aligned::CollectivesAligned,
    &api_exists::ApiExists,
    &only_training::OnlyTraining,
    &device_pinned::DevicePinned,
];
