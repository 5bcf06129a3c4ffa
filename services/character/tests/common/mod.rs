//! What the agent's test files share: an agent service on a data directory, over a
//! real socket, on the scripted model and the fake embedder.

#![allow(dead_code)]

use std::sync::Arc;

use dramatis_character::{AgentOptions, CharacterAgents};
use dramatis_embed::FakeEmbedder;
use dramatis_llm::{RoleModels, ScriptedModel};
use dramatis_memory::modules::ModuleSet;
use dramatis_proto::v1::agent_client::AgentClient;
use dramatis_runtime::Shutdown;

/// An agent's client and the task serving it (which ends once the service has
/// stopped, on `shutdown`, and saved its characters).
pub type Served = (
    AgentClient<tonic::transport::Channel>,
    tokio::task::JoinHandle<Result<(), dramatis_character::ServeError>>,
);

/// An agent service on `data_dir` with `modules` (the profile's own when `None`).
pub async fn agent_on(
    data_dir: &std::path::Path,
    shutdown: &Shutdown,
    modules: Option<ModuleSet>,
) -> Served {
    let mut options = AgentOptions::new(
        RoleModels::uniform(Arc::new(ScriptedModel::new(Vec::new()))),
        Arc::new(FakeEmbedder::new(8)),
    );
    options.data_dir = Some(data_dir.to_path_buf());
    options.memory_modules = modules;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    let served = tokio::spawn(dramatis_character::run(
        listener,
        CharacterAgents::new(options),
        dramatis_runtime::grpc::Security::open(),
        shutdown.clone(),
    ));
    let client = AgentClient::connect(endpoint)
        .await
        .expect("agent reachable");
    (client, served)
}
