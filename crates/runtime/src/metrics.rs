//! Prometheus metrics. Each crate registers what it counts in the process's default
//! registry (the `prometheus` crate's); every service serves them all as text on
//! `GET /metrics` of its own metrics address (`--metrics-listen`), a plain HTTP/1.1
//! port apart from gRPC, as Prometheus scrapes. No metric carries a world id or any
//! text of a story: labels are roles and kinds, so the series stay few.

use std::net::SocketAddr;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus::{Encoder as _, TextEncoder};

use crate::Shutdown;

/// Every registered metric, in Prometheus' text format.
#[must_use]
pub fn render() -> String {
    let mut out = Vec::new();
    if let Err(error) = TextEncoder::new().encode(&prometheus::gather(), &mut out) {
        tracing::warn!(%error, "cannot encode the metrics");
    }
    String::from_utf8(out).unwrap_or_default()
}

async fn metrics() -> Response {
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        render(),
    )
        .into_response()
}

/// Serves `GET /metrics` on `addr` until `shutdown`; returns the bound address.
pub async fn serve(addr: SocketAddr, shutdown: Shutdown) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let app = axum::Router::new().route("/metrics", get(metrics));
    tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown.wait())
            .await;
        if let Err(error) = served {
            tracing::warn!(%error, "the metrics endpoint stopped");
        }
    });
    tracing::info!(addr = %bound, "metrics at http://{bound}/metrics");
    Ok(bound)
}

/// What the metrics endpoint at `addr` answers to `GET /metrics` (status line,
/// headers and body), read as a scraper would over HTTP/1.1.
pub async fn scrape(addr: SocketAddr) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nhost: metrics\r\nconnection: close\r\n\r\n")
        .await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    Ok(answer)
}

/// Buckets for latencies from a millisecond to two minutes (seconds).
pub const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

/// A metric registered in the default registry at first use. Registration fails only
/// for a name used twice, a bug; the metric then still counts, unexported.
#[macro_export]
macro_rules! metric {
    ($kind:ident, $name:expr, $help:expr) => {
        std::sync::LazyLock::new(|| {
            let metric = prometheus::$kind::new($name, $help).expect("valid metric");
            // An error means the name is registered already; this metric still counts.
            let _ = prometheus::register(Box::new(metric.clone()));
            metric
        })
    };
    ($kind:ident, $name:expr, $help:expr, $labels:expr) => {
        std::sync::LazyLock::new(|| {
            let metric = prometheus::$kind::new(prometheus::Opts::new($name, $help), $labels)
                .expect("valid metric");
            // An error means the name is registered already; this metric still counts.
            let _ = prometheus::register(Box::new(metric.clone()));
            metric
        })
    };
}

/// A latency histogram (seconds) registered in the default registry at first use.
#[macro_export]
macro_rules! latency {
    ($name:expr, $help:expr) => {
        std::sync::LazyLock::new(|| {
            let metric = prometheus::Histogram::with_opts(
                prometheus::HistogramOpts::new($name, $help)
                    .buckets($crate::metrics::LATENCY_BUCKETS.to_vec()),
            )
            .expect("valid metric");
            // An error means the name is registered already; this metric still counts.
            let _ = prometheus::register(Box::new(metric.clone()));
            metric
        })
    };
    ($name:expr, $help:expr, $labels:expr) => {
        std::sync::LazyLock::new(|| {
            let metric = prometheus::HistogramVec::new(
                prometheus::HistogramOpts::new($name, $help)
                    .buckets($crate::metrics::LATENCY_BUCKETS.to_vec()),
                $labels,
            )
            .expect("valid metric");
            // An error means the name is registered already; this metric still counts.
            let _ = prometheus::register(Box::new(metric.clone()));
            metric
        })
    };
}

#[cfg(test)]
mod tests {
    static SEEN: std::sync::LazyLock<prometheus::IntCounterVec> = metric!(
        IntCounterVec,
        "dramatis_test_seen_total",
        "Test counter.",
        &["kind"]
    );
    static WAIT: std::sync::LazyLock<prometheus::Histogram> =
        latency!("dramatis_test_wait_seconds", "Test latency.");

    #[tokio::test]
    async fn registered_metrics_are_served_as_prometheus_text() {
        SEEN.with_label_values(&["a"]).inc_by(3);
        WAIT.observe(0.003);
        let shutdown = crate::Shutdown::new();
        let addr = super::serve("127.0.0.1:0".parse().expect("addr"), shutdown.clone())
            .await
            .expect("bound");
        let answer = super::scrape(addr).await.expect("scraped");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(
            answer.contains("dramatis_test_seen_total{kind=\"a\"} 3"),
            "{answer}"
        );
        assert!(
            answer.contains("dramatis_test_wait_seconds_bucket{le=\"0.005\"} 1"),
            "{answer}"
        );
        assert!(
            answer.contains("dramatis_test_wait_seconds_count 1"),
            "{answer}"
        );
        shutdown.trigger();
    }
}
