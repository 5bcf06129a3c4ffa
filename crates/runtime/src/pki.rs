//! The certificates of one deployment: a CA made for it, a certificate for the world
//! service (a TLS server to clients, a TLS client to agents) and one for its agents.
//! Agents accept only callers whose certificate this CA signed; the CA's private key is
//! never written anywhere, so nothing can sign another.
//!
//! `run` and `serve` make one in memory for the agents they start and give the agents
//! their half in a folder; `dramatis certs` writes a whole set for agents started
//! elsewhere.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use tonic::transport::{Certificate, ClientTlsConfig, Identity, ServerTlsConfig};

/// The CA's certificate (what both sides trust).
pub const CA_FILE: &str = "ca.pem";
/// The agents' certificate and key.
pub const AGENT_CERT_FILE: &str = "agent.pem";
pub const AGENT_KEY_FILE: &str = "agent.key";
/// The world service's certificate and key.
pub const WORLD_CERT_FILE: &str = "world.pem";
pub const WORLD_KEY_FILE: &str = "world.key";

/// Names every certificate of a deployment is valid for, beside the ones asked for:
/// agents started by `run` and `serve` listen on loopback.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Certificate material that could not be made, read or used.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("cannot make a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
}

/// A certificate and its private key, PEM-encoded.
#[derive(Clone)]
pub struct CertifiedKey {
    pub cert: String,
    pub key: String,
}

impl std::fmt::Debug for CertifiedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CertifiedKey(..)")
    }
}

impl CertifiedKey {
    fn identity(&self) -> Identity {
        Identity::from_pem(&self.cert, &self.key)
    }
}

/// One deployment's certificates.
#[derive(Debug, Clone)]
pub struct DeploymentPki {
    pub ca: String,
    pub world: CertifiedKey,
    pub agent: CertifiedKey,
}

fn params(
    common_name: &str,
    names: &[String],
    valid_for: Duration,
) -> Result<CertificateParams, rcgen::Error> {
    let mut all: Vec<String> = LOOPBACK_NAMES.iter().map(|n| (*n).to_owned()).collect();
    for name in names {
        if !all.contains(name) {
            all.push(name.clone());
        }
    }
    let mut params = CertificateParams::new(all)?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "Dramatis deployment");
    dn.push(DnType::CommonName, common_name);
    params.distinguished_name = dn;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let at = |secs: u64| {
        time::OffsetDateTime::from_unix_timestamp(i64::try_from(secs).unwrap_or(i64::MAX))
            .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
    };
    // A day's slack for clocks that disagree a little.
    params.not_before = at(now.saturating_sub(86_400));
    params.not_after = at(now.saturating_add(valid_for.as_secs()));
    Ok(params)
}

impl DeploymentPki {
    /// A new CA and the two certificates it signs: the world service's valid for
    /// `world_names` (host names or IP addresses its clients reach it at), the agents'
    /// for `agent_names`, both for loopback. The two never share a name beyond
    /// loopback: a certificate with the agents' key must not pass for the world service
    /// (it would collect clients' tokens).
    pub fn generate(
        world_names: &[String],
        agent_names: &[String],
        valid_for: Duration,
    ) -> Result<Self, PkiError> {
        let ca_key = KeyPair::generate()?;
        let mut ca_params = params("Dramatis deployment CA", &[], valid_for)?;
        ca_params.subject_alt_names.clear();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca_params, ca_key);
        let leaf = |name: &str, names: &[String], usages: Vec<ExtendedKeyUsagePurpose>| {
            let key = KeyPair::generate()?;
            let mut params = params(name, names, valid_for)?;
            params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
            params.extended_key_usages = usages;
            let cert = params.signed_by(&key, &issuer)?;
            Ok::<_, rcgen::Error>(CertifiedKey {
                cert: cert.pem(),
                key: key.serialize_pem(),
            })
        };
        Ok(Self {
            ca: ca_cert.pem(),
            // The world serves clients and calls agents with the same certificate.
            world: leaf(
                "dramatis world service",
                world_names,
                vec![
                    ExtendedKeyUsagePurpose::ServerAuth,
                    ExtendedKeyUsagePurpose::ClientAuth,
                ],
            )?,
            agent: leaf(
                "dramatis agent",
                agent_names,
                vec![ExtendedKeyUsagePurpose::ServerAuth],
            )?,
        })
    }

    /// Writes the CA certificate and the agents' half to `dir` (created, private).
    pub fn write_agent_half(&self, dir: &Path) -> Result<(), PkiError> {
        private_dir(dir)?;
        write(&dir.join(CA_FILE), &self.ca, false)?;
        write(&dir.join(AGENT_CERT_FILE), &self.agent.cert, false)?;
        write(&dir.join(AGENT_KEY_FILE), &self.agent.key, true)
    }

    /// Writes every file: the CA certificate and both halves.
    pub fn write_all(&self, dir: &Path) -> Result<(), PkiError> {
        self.write_agent_half(dir)?;
        write(&dir.join(WORLD_CERT_FILE), &self.world.cert, false)?;
        write(&dir.join(WORLD_KEY_FILE), &self.world.key, true)
    }

    /// How the world service connects to its agents: trusting this CA only, showing
    /// its own certificate.
    #[must_use]
    pub fn world_client_tls(&self) -> ClientTlsConfig {
        agent_client_tls(&self.ca, &self.world)
    }
}

fn agent_client_tls(ca: &str, world: &CertifiedKey) -> ClientTlsConfig {
    ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(ca))
        .identity(world.identity())
}

fn private_dir(dir: &Path) -> Result<(), PkiError> {
    let io = |source| PkiError::Io {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    Ok(())
}

fn write(path: &Path, text: &str, private: bool) -> Result<(), PkiError> {
    let io = |source| PkiError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(if private { 0o600 } else { 0o644 });
    }
    // Used only where files have Unix modes.
    let _ = private;
    let mut file = options.open(path).map_err(io)?;
    std::io::Write::write_all(&mut file, text.as_bytes()).map_err(io)
}

/// A PEM file's text, refused unless it holds `marker` (what makes it `what`).
fn read_pem(path: &Path, marker: &str, what: &str) -> Result<String, PkiError> {
    let text = std::fs::read_to_string(path).map_err(|source| PkiError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if !text.contains(marker) {
        return Err(PkiError::Invalid {
            path: path.to_path_buf(),
            message: format!("not a PEM file with {what}"),
        });
    }
    Ok(text)
}

fn read_cert(path: &Path) -> Result<String, PkiError> {
    read_pem(path, "-----BEGIN CERTIFICATE-----", "a certificate")
}

fn read_key(path: &Path) -> Result<String, PkiError> {
    // PKCS#8 ("PRIVATE KEY"), PKCS#1 ("RSA PRIVATE KEY") and SEC1 ("EC PRIVATE KEY").
    read_pem(path, "PRIVATE KEY-----", "a private key")
}

fn read_pair(cert: &Path, key: &Path) -> Result<CertifiedKey, PkiError> {
    Ok(CertifiedKey {
        cert: read_cert(cert)?,
        key: read_key(key)?,
    })
}

/// A TLS server configuration from a certificate (chain) and key file.
pub fn server_tls(cert: &Path, key: &Path) -> Result<ServerTlsConfig, PkiError> {
    Ok(ServerTlsConfig::new().identity(read_pair(cert, key)?.identity()))
}

/// An agent's TLS: its certificate from `dir`, and client certificates required from
/// the CA in `dir` (a caller without one is refused by [`crate::auth::Access`]).
pub fn agent_server_tls(dir: &Path) -> Result<ServerTlsConfig, PkiError> {
    let ca = read_cert(&dir.join(CA_FILE))?;
    let agent = read_pair(&dir.join(AGENT_CERT_FILE), &dir.join(AGENT_KEY_FILE))?;
    Ok(ServerTlsConfig::new()
        .identity(agent.identity())
        .client_ca_root(Certificate::from_pem(ca))
        // The handshake lets a caller without a certificate through, so that the
        // access layer can answer it with a gRPC status instead of a reset.
        .client_auth_optional(true))
}

/// How the world service reaches agents started elsewhere: the CA and the world's
/// certificate from `dir` (written by `dramatis certs`).
pub fn world_client_tls(dir: &Path) -> Result<ClientTlsConfig, PkiError> {
    let ca = read_cert(&dir.join(CA_FILE))?;
    let world = read_pair(&dir.join(WORLD_CERT_FILE), &dir.join(WORLD_KEY_FILE))?;
    Ok(agent_client_tls(&ca, &world))
}

/// How a client reaches a world service over TLS: the system's roots, and `ca` (a PEM
/// file) when given.
pub fn client_tls(ca: Option<&Path>) -> Result<ClientTlsConfig, PkiError> {
    let mut tls = ClientTlsConfig::new().with_native_roots();
    if let Some(ca) = ca {
        tls = tls.ca_certificate(Certificate::from_pem(read_cert(ca)?));
    }
    Ok(tls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deployment_writes_its_files_with_private_keys_unreadable_to_others() {
        let dir = tempfile_dir();
        let pki = DeploymentPki::generate(
            &["story.example".into()],
            &["agents.example".into()],
            Duration::from_secs(3600),
        )
        .expect("generate");
        pki.write_all(&dir).expect("write");
        for file in [CA_FILE, AGENT_CERT_FILE, WORLD_CERT_FILE] {
            let text = std::fs::read_to_string(dir.join(file)).expect(file);
            assert!(text.starts_with("-----BEGIN CERTIFICATE-----"), "{file}");
        }
        #[cfg(unix)]
        for file in [AGENT_KEY_FILE, WORLD_KEY_FILE] {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.join(file))
                .expect(file)
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "{file} is readable by others: {mode:o}");
        }
        assert_ne!(pki.agent.key, pki.world.key);
        assert!(agent_server_tls(&dir).is_ok());
        assert!(world_client_tls(&dir).is_ok());
        let wrong = dir.join(CA_FILE);
        std::fs::write(&wrong, "not a certificate").expect("overwrite");
        let error = agent_server_tls(&dir).expect_err("bad CA");
        assert!(
            error.to_string().contains("ca.pem: not a PEM file"),
            "{error}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "dramatis-pki-test-{}-{}",
            std::process::id(),
            crate::now_ms()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }
}
