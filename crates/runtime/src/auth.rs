//! Who may call what. A world service exposed beyond loopback takes bearer tokens, each
//! with a role; an agent takes only callers holding a certificate from its deployment's
//! CA (see [`crate::pki`]). Both checks are one tower layer, [`AccessLayer`], in front
//! of every route a server has, so a new RPC cannot be added unguarded.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::Either;
use tonic::body::Body;
use tonic::transport::server::TlsConnectInfo;

use crate::connection::ConnectionInfo;

/// What a token lets its holder do; each role includes the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// List, get and watch worlds.
    Viewer,
    /// Also claim and play seats, and interview characters.
    Player,
    /// Also create, advance and delete worlds, and read the prompt audit.
    Operator,
}

impl Role {
    pub const ALL: [Self; 3] = [Self::Viewer, Self::Player, Self::Operator];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Viewer => "viewer",
            Self::Player => "player",
            Self::Operator => "operator",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|role| role.name() == text)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The holder of a token that was accepted; put in the request's extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub name: String,
    pub role: Role,
}

/// Shortest token accepted: shorter ones are guessable.
pub const MIN_TOKEN_CHARS: usize = 16;

/// The tokens a service accepts. Only their SHA-256 digests are kept, so a lookup's
/// timing says nothing about the tokens themselves.
#[derive(Default)]
pub struct Tokens {
    by_digest: HashMap<[u8; 32], Caller>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("count", &self.by_digest.len())
            .finish()
    }
}

/// A token list that cannot be used; names where and what.
#[derive(Debug, thiserror::Error)]
#[error("{origin}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct TokensError {
    pub origin: String,
    pub line: Option<usize>,
    pub message: String,
}

fn digest(token: &str) -> [u8; 32] {
    let mut out = [0; 32];
    out.copy_from_slice(ring::digest::digest(&ring::digest::SHA256, token.as_bytes()).as_ref());
    out
}

impl Tokens {
    /// Parses a token list: one entry per line (or comma-separated, for an environment
    /// variable), each `ROLE TOKEN [NAME]`; `#` starts a comment. `origin` names the
    /// file or variable in errors. Errors never repeat a token.
    pub fn parse(text: &str, origin: &str) -> Result<Self, TokensError> {
        let mut tokens = Self::default();
        let error = |line: usize, message: String| TokensError {
            origin: origin.to_owned(),
            line: Some(line),
            message,
        };
        for (index, line) in text.lines().enumerate() {
            let number = index + 1;
            let line = line.split('#').next().unwrap_or_default();
            for entry in line.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                let mut words = entry.split_whitespace();
                let (Some(role), Some(token)) = (words.next(), words.next()) else {
                    return Err(error(number, "expected `ROLE TOKEN [NAME]`".into()));
                };
                let name = words.next().unwrap_or(role).to_owned();
                if words.next().is_some() {
                    return Err(error(number, "expected `ROLE TOKEN [NAME]`".into()));
                }
                let role = Role::parse(role).ok_or_else(|| {
                    error(
                        number,
                        format!(
                            "unknown role {:?} (viewer, player or operator)",
                            crate::prefix(role, 20)
                        ),
                    )
                })?;
                if token.chars().count() < MIN_TOKEN_CHARS {
                    return Err(error(
                        number,
                        format!("a token needs at least {MIN_TOKEN_CHARS} characters"),
                    ));
                }
                if !token.bytes().all(|b| b.is_ascii_graphic()) {
                    return Err(error(
                        number,
                        "a token is printable ASCII without spaces".into(),
                    ));
                }
                if tokens
                    .by_digest
                    .insert(digest(token), Caller { name, role })
                    .is_some()
                {
                    return Err(error(number, "this token is listed twice".into()));
                }
            }
        }
        if tokens.by_digest.is_empty() {
            return Err(TokensError {
                origin: origin.to_owned(),
                line: None,
                message: "no tokens in it".into(),
            });
        }
        Ok(tokens)
    }

    /// Reads a token list from a file (see [`Tokens::parse`]).
    pub fn load(path: &Path) -> Result<Self, TokensError> {
        let text = std::fs::read_to_string(path).map_err(|e| TokensError {
            origin: path.display().to_string(),
            line: None,
            message: format!("cannot read it: {e}"),
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.by_digest.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_digest.is_empty()
    }

    /// Who holds `token`, if anyone.
    #[must_use]
    pub fn caller(&self, token: &str) -> Option<&Caller> {
        self.by_digest.get(&digest(token))
    }
}

/// Which role a request path needs; `None`: no credentials at all (health checks, the
/// viewer's static files).
pub type MethodRoles = fn(&str) -> Option<Role>;

/// The rule a server applies to every request.
#[derive(Clone)]
pub enum Access {
    /// Anyone who can connect: a loopback service with no tokens configured.
    Open,
    /// A bearer token whose role covers the method.
    Tokens {
        tokens: Arc<Tokens>,
        roles: MethodRoles,
    },
    /// A client certificate that the TLS handshake verified against the server's
    /// client CA (health checks excepted, for probes).
    PeerCertificate,
}

impl fmt::Debug for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Open => f.write_str("Open"),
            Self::Tokens { tokens, .. } => write!(f, "Tokens({})", tokens.len()),
            Self::PeerCertificate => f.write_str("PeerCertificate"),
        }
    }
}

/// The path prefix of the gRPC health service, open under every rule.
pub const HEALTH_PREFIX: &str = "/grpc.health.v1.Health/";

impl Access {
    /// Whether `request` may proceed; on success, who is calling (token rule only).
    pub fn check<B>(&self, request: &http::Request<B>) -> Result<Option<Caller>, tonic::Status> {
        let path = request.uri().path();
        match self {
            Self::Open => Ok(None),
            Self::PeerCertificate => {
                if path.starts_with(HEALTH_PREFIX) {
                    return Ok(None);
                }
                let verified = request
                    .extensions()
                    .get::<TlsConnectInfo<ConnectionInfo>>()
                    .and_then(TlsConnectInfo::peer_certs)
                    .is_some_and(|certs| !certs.is_empty());
                if verified {
                    Ok(None)
                } else {
                    Err(tonic::Status::unauthenticated(
                        "this agent answers only its world service: connect with the \
                         deployment's client certificate",
                    ))
                }
            }
            Self::Tokens { tokens, roles } => {
                let Some(needed) = roles(path) else {
                    return Ok(None);
                };
                let Some(header) = request.headers().get(http::header::AUTHORIZATION) else {
                    return Err(tonic::Status::unauthenticated(
                        "this world service needs a token: send `authorization: Bearer TOKEN` \
                         (dramatis clients: --token or DRAMATIS_TOKEN)",
                    ));
                };
                let token = header
                    .to_str()
                    .ok()
                    .and_then(|h| h.strip_prefix("Bearer "))
                    .map(str::trim)
                    .ok_or_else(|| {
                        tonic::Status::unauthenticated(
                            "the authorization header is not `Bearer TOKEN`",
                        )
                    })?;
                let caller = tokens
                    .caller(token)
                    .ok_or_else(|| tonic::Status::unauthenticated("unknown token"))?;
                if caller.role < needed {
                    let method = path.rsplit('/').next().unwrap_or_default();
                    return Err(tonic::Status::permission_denied(format!(
                        "{} needs the {needed} role; this token's role is {}",
                        crate::prefix(method, 40),
                        caller.role
                    )));
                }
                Ok(Some(caller.clone()))
            }
        }
    }
}

/// Applies an [`Access`] rule in front of a service.
#[derive(Debug, Clone)]
pub struct AccessLayer {
    access: Access,
}

impl AccessLayer {
    #[must_use]
    pub fn new(access: Access) -> Self {
        Self { access }
    }
}

impl<S> tower_layer::Layer<S> for AccessLayer {
    type Service = AccessService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        AccessService {
            inner,
            access: self.access.clone(),
        }
    }
}

/// See [`AccessLayer`].
#[derive(Debug, Clone)]
pub struct AccessService<S> {
    inner: S,
    access: Access,
}

impl<S, B> tower_service::Service<http::Request<B>> for AccessService<S>
where
    S: tower_service::Service<http::Request<B>, Response = http::Response<Body>>,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = Either<S::Future, std::future::Ready<Result<http::Response<Body>, S::Error>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        match self.access.check(&request) {
            Ok(caller) => {
                if let Some(caller) = caller {
                    request.extensions_mut().insert(caller);
                }
                Either::Left(self.inner.call(request))
            }
            Err(status) => Either::Right(std::future::ready(Ok(refusal(&status, &request)))),
        }
    }
}

/// A trailers-only gRPC answer carrying `status`, typed for gRPC-Web when the request
/// was (browsers read the status from its headers).
fn refusal<B>(status: &tonic::Status, request: &http::Request<B>) -> http::Response<Body> {
    tracing::info!(
        path = %crate::prefix(request.uri().path(), 80),
        code = ?status.code(),
        "refused a call"
    );
    let mut response: http::Response<Body> = status.clone().into_http();
    let grpc_web = request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc-web"));
    if grpc_web {
        response.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/grpc-web+proto"),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens() -> Tokens {
        Tokens::parse(
            "# role token name\nviewer  vvvvvvvvvvvvvvvvvvvv  ann\n\
             player pppppppppppppppppppp, operator oooooooooooooooooooo ops\n",
            "tokens.txt",
        )
        .expect("parses")
    }

    fn request(path: &str, token: Option<&str>) -> http::Request<()> {
        let mut builder = http::Request::builder().uri(path);
        if let Some(token) = token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        builder.body(()).expect("request")
    }

    fn roles(path: &str) -> Option<Role> {
        match path {
            "/open" => None,
            "/write" => Some(Role::Operator),
            _ => Some(Role::Viewer),
        }
    }

    #[test]
    fn a_token_list_names_each_holder_and_role() {
        let tokens = tokens();
        assert_eq!(tokens.len(), 3);
        assert_eq!(
            tokens.caller("vvvvvvvvvvvvvvvvvvvv"),
            Some(&Caller {
                name: "ann".into(),
                role: Role::Viewer
            })
        );
        let player = tokens.caller("pppppppppppppppppppp").expect("player");
        assert_eq!(
            (player.name.as_str(), player.role),
            ("player", Role::Player)
        );
        assert_eq!(
            tokens.caller("oooooooooooooooooooo").map(|c| c.role),
            Some(Role::Operator)
        );
        assert_eq!(tokens.caller("nobody-nobody-nobody"), None);
    }

    #[test]
    fn a_bad_token_list_names_the_line_and_never_the_token() {
        for (text, line, needle) in [
            ("viewer short", Some(1), "at least 16"),
            (
                "\nadmin aaaaaaaaaaaaaaaaaaaaaaaa",
                Some(2),
                "unknown role \"admin\"",
            ),
            ("viewer", Some(1), "ROLE TOKEN"),
            ("viewer aaaaaaaaaaaaaaaaaaaa x y", Some(1), "ROLE TOKEN"),
            (
                "viewer aaaaaaaaaaaaaaaaaaaa\nplayer aaaaaaaaaaaaaaaaaaaa",
                Some(2),
                "twice",
            ),
            ("# nothing\n", None, "no tokens"),
        ] {
            let error = Tokens::parse(text, "t.txt").expect_err(text);
            assert_eq!(error.line, line, "{text}");
            let shown = error.to_string();
            assert!(shown.contains(needle), "{shown}");
            assert!(shown.starts_with("t.txt"), "{shown}");
            assert!(!shown.contains("aaaaaaaaaaaa"), "{shown}");
        }
    }

    #[test]
    fn the_token_rule_checks_presence_holder_and_role() {
        let access = Access::Tokens {
            tokens: Arc::new(tokens()),
            roles,
        };
        assert_eq!(access.check(&request("/open", None)).expect("open"), None);
        let code = |path, token| {
            access
                .check(&request(path, token))
                .map(|caller| caller.map(|c| c.role))
                .map_err(|s| s.code())
        };
        assert_eq!(code("/read", None), Err(tonic::Code::Unauthenticated));
        assert_eq!(
            code("/read", Some("wrong-wrong-wrong-wrong")),
            Err(tonic::Code::Unauthenticated)
        );
        assert_eq!(
            code("/read", Some("vvvvvvvvvvvvvvvvvvvv")),
            Ok(Some(Role::Viewer))
        );
        assert_eq!(
            code("/write", Some("pppppppppppppppppppp")),
            Err(tonic::Code::PermissionDenied)
        );
        assert_eq!(
            code("/write", Some("oooooooooooooooooooo")),
            Ok(Some(Role::Operator))
        );
        let basic = http::Request::builder()
            .uri("/read")
            .header("authorization", "Basic dXNlcjpwYXNz")
            .body(())
            .expect("request");
        assert_eq!(
            access.check(&basic).map_err(|s| s.code()),
            Err(tonic::Code::Unauthenticated)
        );
    }

    #[test]
    fn a_refusal_is_a_trailers_only_answer_typed_for_grpc_web_when_asked_so() {
        let status = tonic::Status::unauthenticated("unknown token");
        for (content_type, answered) in [
            ("application/grpc", "application/grpc"),
            ("application/grpc-web+proto", "application/grpc-web+proto"),
            ("application/grpc-web-text", "application/grpc-web+proto"),
        ] {
            let request = http::Request::builder()
                .uri("/dramatis.v1.World/ListWorlds")
                .header("content-type", content_type)
                .body(())
                .expect("request");
            let response = refusal(&status, &request);
            assert_eq!(response.status(), http::StatusCode::OK);
            let header = |name| response.headers().get(name).and_then(|v| v.to_str().ok());
            assert_eq!(header("content-type"), Some(answered), "{content_type}");
            assert_eq!(header("grpc-status"), Some("16"));
            assert_eq!(header("grpc-message"), Some("unknown%20token"));
        }
    }

    #[test]
    fn the_certificate_rule_refuses_a_caller_without_one_except_for_health() {
        let access = Access::PeerCertificate;
        let status = access
            .check(&request("/dramatis.v1.Agent/Snapshot", None))
            .expect_err("no certificate");
        assert_eq!(status.code(), tonic::Code::Unauthenticated);
        assert!(
            access
                .check(&request("/grpc.health.v1.Health/Check", None))
                .is_ok()
        );
    }
}
