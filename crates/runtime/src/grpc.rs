//! What every Dramatis gRPC server carries: request spans that continue the caller's
//! trace, health checking, and server reflection (v1 and v1alpha, so older tools such as
//! Python's `grpc_reflection.v1alpha` work too) over the `dramatis.v1` descriptors.

use tokio::net::TcpListener;
use tonic::service::Routes;
use tonic::transport::Server;
use tonic::transport::server::{Router, TcpIncoming};

/// Connections from a bound listener, with Nagle's algorithm off: small gRPC frames
/// (a token, a one-event Perceive) must not wait for delayed acknowledgements.
#[must_use]
pub fn incoming(listener: TcpListener) -> TcpIncoming {
    TcpIncoming::from(listener).with_nodelay(Some(true))
}

/// A server router with tracing, health (reporting `service_name` as serving) and
/// reflection in place; add the service itself and serve.
pub async fn standard_router(
    service_name: &str,
) -> Result<Router, tonic_reflection::server::Error> {
    standard_router_with(Server::builder(), service_name, Routes::default()).await
}

/// [`standard_router`] on a server builder of the caller's (with layers, HTTP/1.1 for
/// gRPC-Web, ...), adding to `routes` (the caller's services and any plain HTTP routes).
pub async fn standard_router_with<L: Clone>(
    builder: Server<L>,
    service_name: &str,
    routes: Routes,
) -> Result<Router<L>, tonic_reflection::server::Error> {
    let (reporter, health) = tonic_health::server::health_reporter();
    for name in [service_name, ""] {
        reporter
            .set_service_status(name, tonic_health::ServingStatus::Serving)
            .await;
    }
    // Only the services this port serves are listed (the descriptor set describes
    // both of ours).
    let reflection = || {
        [
            service_name,
            "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
        ]
        .into_iter()
        .fold(
            tonic_reflection::server::Builder::configure()
                .register_encoded_file_descriptor_set(dramatis_proto::v1::FILE_DESCRIPTOR_SET)
                .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET),
            tonic_reflection::server::Builder::with_service_name,
        )
    };
    let routes = routes
        .add_service(health)
        .add_service(reflection().build_v1()?)
        .add_service(reflection().build_v1alpha()?);
    let mut builder = builder.trace_fn(crate::telemetry::server_span);
    Ok(builder.add_routes(routes))
}
