//! Who may call the world service: the role each path of its port needs when tokens
//! are configured, and the security (TLS, access) the server is built with. Below both
//! the registry and the gRPC face, so neither imports the other for it.

use std::sync::Arc;

use dramatis_runtime::auth::{Access, Role, Tokens};
use dramatis_runtime::grpc::Security;

/// TLS for clients and who may call: every caller without tokens (a loopback service),
/// else a bearer token whose role covers [`required_role`] of the path.
#[must_use]
pub fn security(
    tls: Option<tonic::transport::ServerTlsConfig>,
    tokens: Option<&Arc<Tokens>>,
) -> Security {
    Security {
        tls,
        access: tokens.map_or(Access::Open, |tokens| Access::Tokens {
            tokens: Arc::clone(tokens),
            roles: required_role,
        }),
    }
}

/// The role each path of this service's port needs when tokens are configured (see
/// `README.md`, "Running it for others"). A World method not listed needs `operator`,
/// so a new RPC is closed until it is placed here.
#[must_use]
pub fn required_role(path: &str) -> Option<Role> {
    if path.starts_with(dramatis_runtime::auth::HEALTH_PREFIX)
        || path == "/"
        || path == "/viewer"
        || path.starts_with("/viewer/")
    {
        // Probes, and the viewer's static files (its calls carry the token).
        return None;
    }
    let Some(method) = path.strip_prefix("/dramatis.v1.World/") else {
        // Reflection, and anything that would answer 404.
        return Some(Role::Viewer);
    };
    Some(match method {
        "ListScenarios" | "ListWorlds" | "GetWorld" | "Watch" => Role::Viewer,
        "ClaimSeat" | "Play" | "PlayAct" | "Ask" => Role::Player,
        _ => Role::Operator,
    })
}
