//! Training the learned policies, in Rust, seeded and reproducible, against their
//! environments, exporting ONNX into `models/` (or a path given):
//!
//! - [`ppo`]: PPO for the GPU placement scorer on Proximity-DRL's environment
//!   ([`crate::proximity`]);
//! - [`ddqn`]: the WORL-RTGS Double DQN on the DAG planning environment
//!   ([`crate::dag::ddqn_env`]).
//!
//! Above the environments and the learning toolkit ([`crate::learn`]); nothing below needs
//! them at run time: the scorers read the shipped models.

pub mod ddqn;
pub mod ppo;
