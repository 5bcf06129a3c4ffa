//! The web viewer's files, served on the world service's own port beside gRPC and
//! gRPC-Web: `/viewer/` is the page, which talks gRPC-Web back to the same origin.
//!
//! Only a fixed set of files is served (no directory walking): the page's own files
//! from the viewer directory, protobuf.js from its `node_modules` (installed by
//! `scripts/setup.sh`), and the `.proto` sources compiled into this binary.

use std::path::{Path, PathBuf};

use axum::extract::{Path as UrlPath, Request};
use axum::http::{StatusCode, Version, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

/// The page's own files and their content types.
const PAGE_FILES: &[(&str, &str)] = &[
    ("index.html", "text/html; charset=utf-8"),
    ("app.js", "text/javascript; charset=utf-8"),
    ("grpcweb.js", "text/javascript; charset=utf-8"),
    ("style.css", "text/css; charset=utf-8"),
];

/// Where protobuf.js's browser build lives under the viewer directory.
const PROTOBUF_JS: &str = "node_modules/protobufjs/dist/protobuf.min.js";

/// Routes of the viewer whose files are in `dir`.
pub fn routes(dir: &Path) -> axum::Router {
    let index = dir.join("index.html");
    let dir = dir.to_path_buf();
    axum::Router::new()
        .route("/", get(|| async { Redirect::to("/viewer/") }))
        .route("/viewer", get(|| async { Redirect::to("/viewer/") }))
        .route(
            "/viewer/",
            get(move || serve_file(index.clone(), PAGE_FILES[0].1)),
        )
        .route(
            "/viewer/{*path}",
            get(move |UrlPath(path): UrlPath<String>| file(dir.clone(), path)),
        )
}

/// One file of the viewer by its path under `/viewer/`; anything else is not found
/// (rather than a gRPC "unimplemented").
async fn file(dir: PathBuf, path: String) -> Response {
    if let Some((name, kind)) = PAGE_FILES.iter().find(|(name, _)| *name == path) {
        return serve_file(dir.join(name), kind).await;
    }
    if path == "vendor/protobuf.min.js" {
        return serve_file(dir.join(PROTOBUF_JS), "text/javascript; charset=utf-8").await;
    }
    let proto = path.strip_prefix("proto/").and_then(|name| {
        dramatis_proto::v1::PROTO_SOURCES
            .iter()
            .find(|(source, _)| *source == name)
    });
    match proto {
        Some((_, text)) => ok(text.as_bytes().to_vec(), "text/plain; charset=utf-8"),
        None => not_found(&format!("no viewer file {path}")),
    }
}

async fn serve_file(path: PathBuf, kind: &'static str) -> Response {
    match tokio::fs::read(&path).await {
        Ok(bytes) => ok(bytes, kind),
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "viewer file missing");
            let name = path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            not_found(&format!(
                "viewer file {name} cannot be read; run `bash scripts/setup.sh` \
                 or point --viewer-dir at the repository's web/ directory"
            ))
        }
    }
}

fn ok(bytes: Vec<u8>, kind: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "no-cache"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        bytes,
    )
        .into_response()
}

fn not_found(message: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message.to_owned(),
    )
        .into_response()
}

/// A guard against DNS rebinding for a world service bound to a loopback address: a
/// browser request (HTTP/1.x) must name this machine as `localhost` or a loopback IP
/// in its `Host`. Otherwise a hostile page whose name was re-pointed at 127.0.0.1
/// would count as same-origin and could drive the API. gRPC clients (HTTP/2) are not
/// browsers and pass.
pub async fn loopback_browsers_only(request: Request, next: Next) -> Response {
    if request.version() >= Version::HTTP_2 {
        return next.run(request).await;
    }
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if is_loopback_host(host) {
        return next.run(request).await;
    }
    (
        StatusCode::FORBIDDEN,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!(
            "this world service listens on a loopback address; open it as localhost or \
             127.0.0.1, not {host:?}"
        ),
    )
        .into_response()
}

/// Whether a `Host` header value names this machine: `localhost` or a loopback IP,
/// with or without a port.
fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::is_loopback_host;

    #[test]
    fn only_names_of_this_machine_are_loopback_hosts() {
        for host in [
            "localhost",
            "localhost:7070",
            "127.0.0.1:7070",
            "127.3.4.5",
            "[::1]:7070",
            "LOCALHOST",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "",
            "evil.example",
            "evil.example:7070",
            "10.0.0.2:7070",
            "localhost.evil.example",
            "[::2]:80",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }
}
