//! The web viewer's files, served on the world service's own port beside gRPC and
//! gRPC-Web: `/viewer/` is the page, which talks gRPC-Web back to the same origin.
//!
//! Only a fixed set of files is served (no directory walking): the page's own files
//! from the viewer directory, protobuf.js from its `node_modules` (installed by
//! `scripts/setup.sh`), and the `.proto` sources compiled into this binary.

use std::path::{Path, PathBuf};

use axum::extract::Path as UrlPath;
use axum::http::{StatusCode, header};
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
            not_found(&format!(
                "viewer file {} cannot be read ({error}); run `bash scripts/setup.sh` \
                 or point --viewer-dir at the repository's web/ directory",
                path.display()
            ))
        }
    }
}

fn ok(bytes: Vec<u8>, kind: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "no-cache"),
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
