//! Adding up the cost of language-model work (`Usage`).

use crate::v1::Usage;

impl Usage {
    /// Adds the calls and tokens of `other`. Wall time is not added: work measured
    /// inside a larger span would be counted twice.
    pub fn add_calls_and_tokens(&mut self, other: &Self) {
        self.llm_calls = self.llm_calls.saturating_add(other.llm_calls);
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
    }

    /// Counts one model call of `prompt_tokens` in and `completion_tokens` out.
    pub fn count_call(&mut self, prompt_tokens: u32, completion_tokens: u32) {
        self.add_calls_and_tokens(&Self {
            llm_calls: 1,
            prompt_tokens,
            completion_tokens,
            latency_ms: 0,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_and_tokens_add_up_and_wall_time_does_not() {
        let mut total = Usage {
            latency_ms: 5,
            ..Usage::default()
        };
        total.count_call(100, 20);
        total.add_calls_and_tokens(&Usage {
            llm_calls: 2,
            prompt_tokens: 7,
            completion_tokens: u32::MAX,
            latency_ms: 99,
        });
        assert_eq!(
            (
                total.llm_calls,
                total.prompt_tokens,
                total.completion_tokens,
                total.latency_ms
            ),
            (3, 107, u32::MAX, 5)
        );
    }
}
