//! The story's pure logic: the world's state and how events change it, who acts next,
//! who perceives what, the events a step produces, and the frame a character acts in.
//! Nothing here does I/O, holds a lock or reads a clock, so all of it is unit-tested.

pub mod perception;
pub mod scheduler;
pub mod state;
