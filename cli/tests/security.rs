//! The security flags as a user meets them: a service that would be exposed
//! unprotected refuses to start, an agent needs certificates or an explicit `--no-tls`,
//! `dramatis certs` writes a deployment and will not overwrite one, and the client
//! commands carry a token and trust a CA.
#![allow(
    clippy::too_many_lines,
    reason = "an end-to-end test tells one story from start to end; cut up, it would hide its order"
)]

mod common;

use common::{dramatis_env, serve_scripted_with};

/// `dramatis serve --scripted builtin` on `listen` with `extra` arguments, expected to
/// refuse to start; its stderr.
async fn serve_refused(data: &str, listen: &str, extra: &[&str], env: &[(&str, &str)]) -> String {
    let mut args = vec!["serve", "--listen", listen, "--scripted", "builtin"];
    args.extend(["--data-dir", data, "--no-viewer"]);
    args.extend(extra);
    let (ok, _, err) = dramatis_env(&args, env).await;
    assert!(!ok, "serve {extra:?} must refuse to start");
    err
}

#[tokio::test]
async fn a_service_that_would_be_exposed_unprotected_refuses_to_start() {
    let data = tempfile::tempdir().expect("temp dir");
    let dir = data.path().to_string_lossy().into_owned();
    let tokens = data.path().join("tokens");
    std::fs::write(&tokens, "operator operator-token-0123456789\n").expect("tokens");
    let tokens = tokens.to_string_lossy().into_owned();

    let err = serve_refused(&dir, "0.0.0.0:0", &[], &[]).await;
    assert!(
        err.contains("reachable from other machines, and no tokens are configured"),
        "{err}"
    );
    let err = serve_refused(&dir, "0.0.0.0:0", &["--auth-tokens", &tokens], &[]).await;
    assert!(err.contains("tokens would cross it in the clear"), "{err}");

    // A token list that cannot work names its line and never shows the token.
    let bad = data.path().join("bad-tokens");
    std::fs::write(&bad, "# ops\nadmin secret-secret-secret-secret\n").expect("tokens");
    let err = serve_refused(
        &dir,
        "127.0.0.1:0",
        &["--auth-tokens", &bad.to_string_lossy()],
        &[],
    )
    .await;
    assert!(
        err.contains("bad-tokens:2: unknown role \"admin\""),
        "{err}"
    );
    assert!(!err.contains("secret-secret"), "{err}");

    // Tokens from a file and from the environment at once: which would win is unclear.
    let err = serve_refused(
        &dir,
        "127.0.0.1:0",
        &["--auth-tokens", &tokens],
        &[("DRAMATIS_AUTH_TOKENS", "viewer viewer-token-0123456789")],
    )
    .await;
    assert!(err.contains("tokens are given twice"), "{err}");
}

#[tokio::test]
async fn an_agent_needs_the_deployment_certificates_or_an_explicit_no_tls_on_loopback() {
    let data = tempfile::tempdir().expect("temp dir");
    let shards = data.path().join("shards").to_string_lossy().into_owned();
    let agent = |extra: &[&str]| {
        let mut args = vec!["agent", "--scripted", "builtin", "--data-dir", &shards];
        args.extend(extra);
        args.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let refused = |args: Vec<String>| async move {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, _, err) = dramatis_env(&args, &[]).await;
        assert!(!ok, "agent {args:?} must refuse to start");
        err
    };
    let err = refused(agent(&["--listen", "127.0.0.1:0"])).await;
    assert!(
        err.contains("an agent answers only its world service: give --tls DIR"),
        "{err}"
    );
    let err = refused(agent(&["--listen", "0.0.0.0:0", "--no-tls"])).await;
    assert!(
        err.contains("--no-tls is for a loopback --listen only"),
        "{err}"
    );
    let err = refused(agent(&[
        "--listen",
        "127.0.0.1:0",
        "--tls",
        "/nonexistent/certs",
    ]))
    .await;
    assert!(err.contains("/nonexistent/certs/ca.pem"), "{err}");
}

/// `dramatis certs` writes a deployment once; the world service then serves TLS to
/// clients with its certificate and takes tokens, and the client commands reach it
/// with `--tls-ca` and a token from the environment.
#[tokio::test]
async fn clients_reach_a_tls_service_with_its_ca_and_a_token() {
    let data = tempfile::tempdir().expect("temp dir");
    let certs = data.path().join("certs");
    let certs_arg = certs.to_string_lossy().into_owned();
    let both = ["--host", "story.example", "--agent-host", "story.example"];
    let (ok, _, err) =
        dramatis_env(&[&["certs", "--out", &certs_arg][..], &both].concat(), &[]).await;
    assert!(!ok, "one name for the world and the agents must be refused");
    assert!(err.contains("both --host and --agent-host"), "{err}");
    let (ok, out, err) = dramatis_env(
        &[
            "certs",
            "--out",
            &certs_arg,
            "--host",
            "story.example",
            "--agent-host",
            "agents.example",
        ],
        &[],
    )
    .await;
    assert!(ok, "{err}");
    assert!(out.contains("dramatis agent --tls"), "{out}");
    for file in ["ca.pem", "agent.pem", "agent.key", "world.pem", "world.key"] {
        assert!(certs.join(file).is_file(), "{file}");
    }
    // As openssl reads them: the agents' certificate names the agents only (before,
    // `--host` gave it the world's names too, and with serverAuth an agent's key
    // could pass for the world service and collect clients' tokens).
    let read = |file: &str| {
        let out = std::process::Command::new("openssl")
            .args([
                "x509",
                "-noout",
                "-ext",
                "subjectAltName,extendedKeyUsage",
                "-in",
            ])
            .arg(certs.join(file))
            .output()
            .expect("openssl (scripts/setup.sh installs it)");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let agent = read("agent.pem");
    assert!(agent.contains("DNS:agents.example"), "{agent}");
    assert!(!agent.contains("story.example"), "{agent}");
    assert!(agent.contains("TLS Web Server Authentication"), "{agent}");
    assert!(!agent.contains("Client Authentication"), "{agent}");
    let world = read("world.pem");
    assert!(world.contains("DNS:story.example"), "{world}");
    assert!(!world.contains("agents.example"), "{world}");
    assert!(world.contains("TLS Web Client Authentication"), "{world}");
    let (ok, _, err) = dramatis_env(&["certs", "--out", &certs_arg], &[]).await;
    assert!(!ok, "a second run must not replace the CA agents trust");
    assert!(
        err.contains("already holds a deployment's certificates"),
        "{err}"
    );

    let tokens = data.path().join("tokens");
    std::fs::write(
        &tokens,
        "viewer viewer-token-0123456789 vera\noperator operator-token-0123456789 olga\n",
    )
    .expect("tokens");
    let cert = certs.join("world.pem").to_string_lossy().into_owned();
    let key = certs.join("world.key").to_string_lossy().into_owned();
    let (mut server, url) = serve_scripted_with(
        &data.path().join("world").to_string_lossy(),
        &[
            "--auth-tokens",
            &tokens.to_string_lossy(),
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
        ],
    )
    .await;
    let url = url.replace("http://", "https://");
    let ca = certs.join("ca.pem").to_string_lossy().into_owned();
    let viewer = [("DRAMATIS_TOKEN", "viewer-token-0123456789")];
    let operator = [("DRAMATIS_TOKEN", "operator-token-0123456789")];
    let worlds = ["worlds", "--server", &url, "--tls-ca", &ca];

    let (ok, _, err) = dramatis_env(&worlds, &[]).await;
    assert!(!ok);
    assert!(
        err.contains("Unauthenticated: this world service needs a token"),
        "{err}"
    );
    let (ok, _, err) = dramatis_env(&["worlds", "--server", &url], &viewer).await;
    assert!(!ok, "the service's CA is not among the system's roots");
    assert!(
        err.contains(&format!("cannot reach the world service at {url}")),
        "{err}"
    );
    let (ok, _, err) = dramatis_env(&worlds, &viewer).await;
    assert!(ok, "{err}");

    let create = [
        "create",
        "study-in-scarlet",
        "--id",
        "tls",
        "--server",
        &url,
        "--tls-ca",
        &ca,
    ];
    let (ok, _, err) = dramatis_env(&create, &viewer).await;
    assert!(!ok);
    assert!(
        err.contains("PermissionDenied: CreateWorld needs the operator role"),
        "{err}"
    );
    let (ok, out, err) = dramatis_env(&create, &operator).await;
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "tls");
    let (ok, out, err) = dramatis_env(&worlds, &viewer).await;
    assert!(ok, "{err}");
    assert!(out.contains("tls"), "{out}");
    let _ = server.kill().await;
}
