//! A fixed clock, for tests and replaying conversations with their own dates.

use crate::core::ports::Clock;

pub struct FixedClock(pub i64);

impl Clock for FixedClock {
    fn now_millis(&self) -> i64 {
        self.0
    }
}
