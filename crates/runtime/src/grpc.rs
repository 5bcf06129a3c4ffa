//! What every Dramatis gRPC server carries: request spans that continue the caller's
//! trace, health checking, and server reflection (v1 and v1alpha, so older tools such as
//! Python's `grpc_reflection.v1alpha` work too) over the `dramatis.v1` descriptors,
//! behind TLS when configured and the [`Access`] rule in front of every route.

use tokio::net::TcpListener;
use tonic::service::Routes;
use tonic::transport::server::{Router, TcpIncoming};
use tonic::transport::{Server, ServerTlsConfig};
use tower_layer::{Identity, Stack};

use crate::auth::{Access, AccessLayer};

/// How a server is reached (plain or TLS) and who may call it.
#[derive(Debug, Clone)]
pub struct Security {
    pub tls: Option<ServerTlsConfig>,
    pub access: Access,
}

impl Security {
    /// Plain HTTP/2, anyone who can connect: loopback services with nothing configured.
    #[must_use]
    pub fn open() -> Self {
        Self {
            tls: None,
            access: Access::Open,
        }
    }
}

/// A server builder with `security` applied: the TLS acceptor, and the access layer
/// around every route (health and reflection included).
pub fn secured_builder(
    security: &Security,
) -> Result<Server<Stack<AccessLayer, Identity>>, tonic::transport::Error> {
    let mut builder = Server::builder();
    if let Some(tls) = &security.tls {
        builder = builder.tls_config(tls.clone())?;
    }
    Ok(builder.layer(AccessLayer::new(security.access.clone())))
}

/// Connections from a bound listener, with Nagle's algorithm off: small gRPC frames
/// (a token, a one-event Perceive) must not wait for delayed acknowledgements.
#[must_use]
pub fn incoming(listener: TcpListener) -> TcpIncoming {
    TcpIncoming::from(listener).with_nodelay(Some(true))
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

/// Serves only the gRPC health service (`service_name` and the server as a whole,
/// both serving) on `addr`, plain HTTP/2, until `shutdown`; returns the bound address.
/// For probes (a kubelet's) that cannot present the client certificate a service's
/// own port demands; it answers nothing else.
pub async fn serve_health(
    addr: std::net::SocketAddr,
    service_name: &str,
    shutdown: crate::Shutdown,
) -> std::io::Result<std::net::SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let (reporter, health) = tonic_health::server::health_reporter();
    for name in [service_name, ""] {
        reporter
            .set_service_status(name, tonic_health::ServingStatus::Serving)
            .await;
    }
    tokio::spawn(async move {
        let served = Server::builder()
            .add_service(health)
            .serve_with_incoming_shutdown(incoming(listener), shutdown.wait())
            .await;
        if let Err(error) = served {
            tracing::warn!(%error, "the health endpoint stopped");
        }
    });
    Ok(bound)
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn the_health_port_answers_serving_for_the_service_and_nothing_else() {
        let shutdown = crate::Shutdown::new();
        let addr = super::serve_health(
            "127.0.0.1:0".parse().expect("addr"),
            "dramatis.v1.Agent",
            shutdown.clone(),
        )
        .await
        .expect("bound");
        let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
            .expect("uri")
            .connect()
            .await
            .expect("reachable");
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
        for service in ["dramatis.v1.Agent", ""] {
            let answer = health
                .check(tonic_health::pb::HealthCheckRequest {
                    service: service.into(),
                })
                .await
                .expect("answered")
                .into_inner();
            assert_eq!(
                answer.status,
                tonic_health::pb::health_check_response::ServingStatus::Serving as i32
            );
        }
        let unknown = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: "dramatis.v1.World".into(),
            })
            .await;
        assert_eq!(
            unknown.expect_err("not served").code(),
            tonic::Code::NotFound
        );
        // No other service lives on this port.
        let mut agent = dramatis_proto::v1::agent_client::AgentClient::new(channel);
        let call = agent
            .snapshot(dramatis_proto::v1::SnapshotRequest::default())
            .await;
        assert_eq!(
            call.expect_err("no agent here").code(),
            tonic::Code::Unimplemented
        );
        shutdown.trigger();
    }
}
