//! `dramatis-character` is the character agent service. It hosts one or more
//! characters, each with its own shard: the character's profile, its ReverieMem memory
//! (episodic scene memories, visibility-bounded SPOCV facts, personality patterns and
//! emotion record) and the events it perceived, embedded by the agent's own embedder.
//! `Act` and `Answer` run the read path on that shard and the scene frame only; scene
//! ends run the write path on what the character perceived.
//!
//! It must never call the world service, read another character's shard, or accept an
//! event its character did not perceive.

mod act;
mod action;
mod answer;
pub mod boundary;
mod character;
mod echo;
mod error;
pub mod evidence;
pub mod grpc;
pub mod host;
pub mod lore;
mod mind;
pub mod modules;
mod perceive;
mod prompt;
mod recall;
pub mod shard;
mod stream_text;

pub use action::{ACTION_SCHEMA_NAME, ParsedAction, action_schema, parse_action};
pub use answer::RecallView;
pub use boundary::GuardMode;
pub use character::Character;
pub use error::AgentError;
pub use host::{AgentOptions, AnswerOutcome, CharacterAgents, MemoryWrites};
pub use prompt::ABSTAIN_INSTRUCTION;
pub use shard::Shard;

use dramatis_proto::v1::agent_server::AgentServer;
use dramatis_runtime::Shutdown;
use dramatis_runtime::grpc::Security;
use tokio::net::TcpListener;

/// Why the agent service stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("grpc server: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error("reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
}

/// Serves the agent service on `listener` until `shutdown` triggers, then saves every
/// attached character. With TLS whose
/// client CA is the deployment's and [`Access::PeerCertificate`], only the world
/// service can call it.
///
/// [`Access::PeerCertificate`]: dramatis_runtime::auth::Access::PeerCertificate
pub async fn run(
    listener: TcpListener,
    agents: CharacterAgents,
    security: Security,
    shutdown: Shutdown,
) -> Result<(), ServeError> {
    let builder = dramatis_runtime::grpc::secured_builder(&security)?;
    let routes =
        tonic::service::Routes::new(AgentServer::new(grpc::AgentGrpc::new(agents.clone())));
    let router =
        dramatis_runtime::grpc::standard_router_with(builder, "dramatis.v1.Agent", routes).await?;
    tracing::info!(
        addr = ?listener.local_addr().ok(),
        tls = security.tls.is_some(),
        access = ?security.access,
        "agent service listening"
    );
    router
        .serve_with_incoming_shutdown(
            dramatis_runtime::grpc::incoming(
                listener,
                dramatis_runtime::grpc::DEFAULT_MAX_CONNECTIONS,
            ),
            shutdown.wait(),
        )
        .await?;
    // A turn under way goes on to its end; then every shard is saved: a last turn's
    // state waits for its character's own event.
    let left = agents.finish(std::time::Duration::from_secs(10)).await;
    if left > 0 {
        tracing::warn!(tasks = left, "stopping with turns still under way");
    }
    agents.save_all().await;
    Ok(())
}
