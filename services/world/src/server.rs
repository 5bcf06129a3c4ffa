//! Wiring the world service onto a listener: gRPC, gRPC-Web and the viewer's files on
//! one port, behind TLS and the access policy, with the registry's background sweeps.

use dramatis_proto::v1::world_server::WorldServer;
use dramatis_runtime::Shutdown;
use tokio::net::TcpListener;

use crate::error::WorldError;
use crate::registry::{WorldServiceOptions, Worlds};
use crate::{grpc, viewer};

/// Why the world service stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    World(#[from] WorldError),
    #[error("grpc server: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error("reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
}

/// Serves the world service on `listener` until `shutdown` triggers. Worlds recorded
/// in the log are restored first.
pub async fn run(
    listener: TcpListener,
    options: WorldServiceOptions,
    shutdown: Shutdown,
) -> Result<(), ServeError> {
    let worlds = Worlds::open(&options)?;
    let restored = worlds.restore().await?;
    serve_worlds(listener, worlds, shutdown, restored).await
}

/// Serves an opened registry (tests keep a handle to it).
pub async fn serve_worlds(
    listener: TcpListener,
    worlds: Worlds,
    shutdown: Shutdown,
    restored: usize,
) -> Result<(), ServeError> {
    // gRPC, gRPC-Web (HTTP/1.1, for browsers) and the viewer's files on one port. The
    // gRPC-Web translation wraps the World service only: as a server-wide layer it
    // would answer every plain HTTP/1.1 request (the viewer's files) with 400.
    let builder = dramatis_runtime::grpc::secured_builder(worlds.security())?.accept_http1(true);
    let tls = worlds.security().tls.is_some();
    let access = format!("{:?}", worlds.security().access);
    let viewer = worlds.viewer_dir().map(viewer::routes);
    let max_message = worlds.limits().max_message_bytes;
    let max_connections = worlds.limits().max_connections;
    if let Some(idle) = worlds.limits().idle_detach {
        worlds.watch_idle(idle, shutdown.clone());
    }
    worlds.renew_leases(shutdown.clone());
    let log = worlds.log().describe();
    let replica = worlds.cluster().map(|c| c.leases.me().id.clone());
    let finishing = worlds.clone();
    let world = tower_layer::Layer::layer(
        &tonic_web::GrpcWebLayer::new(),
        WorldServer::new(grpc::WorldGrpc::new(worlds)).max_decoding_message_size(max_message),
    );
    let mut router = tonic::service::Routes::new(world).into_axum_router();
    if let Some(viewer) = viewer {
        router = router.merge(viewer);
    }
    if listener.local_addr().is_ok_and(|a| a.ip().is_loopback()) {
        router = router.layer(axum::middleware::from_fn(viewer::loopback_browsers_only));
    }
    let routes = tonic::service::Routes::from(router);
    let router =
        dramatis_runtime::grpc::standard_router_with(builder, "dramatis.v1.World", routes).await?;
    let addr = listener.local_addr().ok();
    tracing::info!(
        ?addr,
        restored,
        tls,
        access,
        log,
        ?replica,
        "world service listening"
    );
    router
        .serve_with_incoming_shutdown(
            dramatis_runtime::grpc::incoming(listener, max_connections),
            shutdown.wait(),
        )
        .await?;
    // A call's work that was under way goes on to its end: wait for it, within a bound.
    let left = finishing.finish(SHUTDOWN_WAIT).await;
    if left > 0 {
        tracing::warn!(
            tasks = left,
            "stopping with work still under way; a world it changed is read back from its log"
        );
    }
    Ok(())
}

/// How long a stopping service waits for the work of calls under way.
const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::agent_clients::StaticAgents;

    fn worlds(data: &std::path::Path) -> Worlds {
        let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
        let agents =
            StaticAgents::new(vec!["http://127.0.0.1:9".into()]).expect("an agent address");
        Worlds::open(&WorldServiceOptions::new(
            shipped,
            data.join("events.redb"),
            Arc::new(agents),
        ))
        .expect("worlds")
    }

    /// A call's work under way when the service is told to stop ends before the
    /// service does; work past the bound is counted, not waited for.
    #[tokio::test]
    async fn a_stopping_service_waits_for_the_work_under_way() {
        let data = tempfile::tempdir().expect("data");
        let worlds = worlds(data.path());
        let ended = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ended);
        worlds.tasks().spawn(async move {
            tokio::time::sleep(Duration::from_millis(400)).await;
            flag.store(true, Ordering::SeqCst);
        });
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let shutdown = Shutdown::new();
        let serving = tokio::spawn(serve_worlds(listener, worlds.clone(), shutdown.clone(), 0));
        tokio::time::sleep(Duration::from_millis(50)).await;
        shutdown.trigger();
        serving.await.expect("the serve task").expect("served");
        assert!(
            ended.load(Ordering::SeqCst),
            "the service stopped before the work under way ended"
        );

        let other = tempfile::tempdir().expect("data");
        let stuck = self::worlds(other.path());
        stuck
            .tasks()
            .spawn(tokio::time::sleep(Duration::from_secs(600)));
        assert_eq!(stuck.finish(Duration::from_millis(50)).await, 1);
    }
}
