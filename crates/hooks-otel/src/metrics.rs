//! The instruments: GenAI and agent counters and histograms.

use opentelemetry::metrics::{Counter, Histogram, Meter};

use crate::semconv::*;

pub(crate) struct Instruments {
    pub(crate) operation_duration: Histogram<f64>,
    pub(crate) token_usage: Histogram<u64>,
    pub(crate) invocations: Counter<u64>,
    pub(crate) iterations: Counter<u64>,
    pub(crate) tool_calls: Counter<u64>,
    pub(crate) tool_errors: Counter<u64>,
    pub(crate) tool_duration: Histogram<f64>,
    pub(crate) time_to_first_token: Histogram<f64>,
}

impl Instruments {
    pub(crate) fn new(meter: &Meter) -> Self {
        Self {
            operation_duration: meter
                .f64_histogram(METRIC_OPERATION_DURATION)
                .with_unit("s")
                .with_description("GenAI operation duration")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            token_usage: meter
                .u64_histogram(METRIC_TOKEN_USAGE)
                .with_unit("{token}")
                .with_description("Number of input and output tokens used")
                .with_boundaries(TOKEN_BUCKETS.to_vec())
                .build(),
            invocations: meter
                .u64_counter(METRIC_INVOCATIONS)
                .with_unit("{invocation}")
                .with_description("Agent runs that ended")
                .build(),
            iterations: meter
                .u64_counter(METRIC_ITERATIONS)
                .with_unit("{iteration}")
                .with_description("Agent loop iterations started")
                .build(),
            tool_calls: meter
                .u64_counter(METRIC_TOOL_CALLS)
                .with_unit("{call}")
                .with_description("Tool calls that ended")
                .build(),
            tool_errors: meter
                .u64_counter(METRIC_TOOL_ERRORS)
                .with_unit("{error}")
                .with_description("Tool calls that failed")
                .build(),
            tool_duration: meter
                .f64_histogram(METRIC_TOOL_DURATION)
                .with_unit("s")
                .with_description("Tool call duration")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            time_to_first_token: meter
                .f64_histogram(METRIC_TIME_TO_FIRST_TOKEN)
                .with_unit("s")
                .with_description("Time to the first piece of a streamed reply")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
        }
    }
}
