//! The context window: token accounting, compaction, offloading of large outputs and the tools
//! that restore or compact them.

mod compact;
mod compact_tool;
mod offload;
mod read_result;
mod window;

pub use compact::{CompactReason, CompactionReport};
pub(crate) use compact_tool::CompactContext;
pub use offload::{DEFAULT_OFFLOAD_BYTES, StoreOffloader};
pub(crate) use read_result::ReadResult;
pub use read_result::{ReadResultArgs, ReadUnit, read_page};
pub use window::ContextConfig;
pub(crate) use window::{CALIBRATION_KEY, ContextState, FixedCounts};
