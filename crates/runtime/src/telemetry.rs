//! Logging and tracing. `tracing` to stderr always; OpenTelemetry export over OTLP/gRPC
//! when `OTEL_EXPORTER_OTLP_ENDPOINT` is set. W3C trace context crosses gRPC hops:
//! clients inject it into request metadata, servers continue the trace from it.

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Keeps the exporter alive; flushes spans (under a timeout) when dropped.
#[derive(Debug)]
pub struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take() {
            // The SDK's shutdown waits for the batch exporter; bound it so a dead
            // collector cannot hold the process.
            let (done_tx, done_rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                // The caller may have stopped waiting (below); the spans then go unflushed.
                let _ = done_tx.send(provider.shutdown());
            });
            // Past the bound the process goes on to exit without the last spans.
            let _ = done_rx.recv_timeout(std::time::Duration::from_secs(3));
        }
    }
}

/// Installs the global subscriber. The filter comes from `DRAMATIS_LOG` (then
/// `RUST_LOG`), defaulting to `default_filter`.
pub fn init(service_name: &'static str, default_filter: &str) -> TelemetryGuard {
    init_with(service_name, default_filter, None)
}

/// A layer given to [`init_with`] beside the log and trace exporters.
pub type ExtraLayer =
    Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

/// [`init`] with one more layer, which sees every span and event whatever the log
/// filter lets through (the filter applies to the log and the trace export only): the
/// benchmarks time stages with it.
pub fn init_with(
    service_name: &'static str,
    default_filter: &str,
    extra: Option<ExtraLayer>,
) -> TelemetryGuard {
    let filter = || {
        std::env::var("DRAMATIS_LOG")
            .or_else(|_| std::env::var("RUST_LOG"))
            .ok()
            .and_then(|f| EnvFilter::try_new(f).ok())
            .unwrap_or_else(|| EnvFilter::new(default_filter))
    };
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_filter(filter());
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let provider = otlp_provider(service_name);
    let otel = provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer(service_name))
            .with_filter(filter())
    });
    // A subscriber set already (by a test, or an earlier call) stays.
    let _ = tracing_subscriber::registry()
        .with(extra)
        .with(fmt)
        .with(otel)
        .try_init();
    TelemetryGuard { provider }
}

fn otlp_provider(service_name: &'static str) -> Option<SdkTracerProvider> {
    std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT")?;
    let exporter = match opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .build()
    {
        Ok(exporter) => exporter,
        Err(error) => {
            eprintln!("telemetry: OTLP exporter disabled: {error}");
            return None;
        }
    };
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service_name)
        .build();
    Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build(),
    )
}

struct HeaderInjector<'a>(&'a mut tonic::metadata::MetadataMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(key), Ok(value)) = (
            tonic::metadata::MetadataKey::from_bytes(key.as_bytes()),
            tonic::metadata::MetadataValue::try_from(value.as_str()),
        ) {
            self.0.insert(key, value);
        }
    }
}

struct HttpExtractor<'a>(&'a http::HeaderMap);

impl Extractor for HttpExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// A client interceptor: puts the current span's trace context into the request.
pub fn inject_trace_context(
    mut request: tonic::Request<()>,
) -> Result<tonic::Request<()>, tonic::Status> {
    let context = tracing::Span::current().context();
    TraceContextPropagator::new()
        .inject_context(&context, &mut HeaderInjector(request.metadata_mut()));
    Ok(request)
}

/// For `Server::trace_fn`: a span per request that continues the caller's trace.
pub fn server_span(request: &http::Request<()>) -> tracing::Span {
    let span = tracing::info_span!("grpc", path = %request.uri().path());
    let parent = TraceContextPropagator::new().extract(&HttpExtractor(request.headers()));
    // A span that is not recorded has no parent to take; the request goes on untraced.
    let _ = span.set_parent(parent);
    span
}
