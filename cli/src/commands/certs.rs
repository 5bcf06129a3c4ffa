//! `dramatis certs`: a deployment's certificates, for agents started elsewhere.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use clap::Args;
use dramatis_runtime::pki::{
    AGENT_CERT_FILE, AGENT_KEY_FILE, CA_FILE, DeploymentPki, WORLD_CERT_FILE, WORLD_KEY_FILE,
};

#[derive(Debug, Args)]
pub struct CertsArgs {
    /// Folder to write the files to (created; its keys are readable by you only).
    #[arg(long, default_value = "dramatis-certs")]
    pub out: PathBuf,
    /// A host name or IP address the world service is reached at by its clients
    /// (repeat for more): only world.pem carries it. Loopback names are always included.
    #[arg(long = "host", value_name = "NAME")]
    pub hosts: Vec<String>,
    /// A host name or IP address agents are reached at by the world service (repeat
    /// for more; for Kubernetes, the agents' headless service): only agent.pem carries
    /// it, so an agent's key can never pass for the world service.
    #[arg(long = "agent-host", value_name = "NAME")]
    pub agent_hosts: Vec<String>,
    /// How many days the certificates are valid.
    #[arg(long, default_value_t = 365)]
    pub days: u64,
    /// Replace certificates already in --out.
    #[arg(long)]
    pub force: bool,
}

pub fn certs(args: &CertsArgs) -> anyhow::Result<()> {
    if args.out.join(CA_FILE).exists() && !args.force {
        bail!(
            "{} already holds a deployment's certificates; agents trust its CA. Give \
             --force to replace them (every agent and world service then needs the new files)",
            args.out.display()
        );
    }
    if args.days == 0 {
        bail!("--days must be at least 1");
    }
    let shared: Vec<&String> = args
        .hosts
        .iter()
        .filter(|h| args.agent_hosts.contains(h))
        .collect();
    if let Some(name) = shared.first() {
        bail!(
            "{name} is given as both --host and --agent-host: a name the agents' certificate \
             carries must not be the world service's, or an agent's key could pass for it"
        );
    }
    let pki = DeploymentPki::generate(
        &args.hosts,
        &args.agent_hosts,
        Duration::from_secs(args.days * 86_400),
    )?;
    pki.write_all(&args.out)?;
    let at = |file: &str| args.out.join(file).display().to_string();
    println!(
        "wrote a new deployment CA and its certificates to {}",
        args.out.display()
    );
    println!(
        "  agents:        dramatis agent --tls {}   (uses {}, {}, {})",
        args.out.display(),
        CA_FILE,
        AGENT_CERT_FILE,
        AGENT_KEY_FILE
    );
    println!(
        "  world service: dramatis serve --agent-tls {} --agent-endpoint https://HOST:PORT   (uses {}, {}, {})",
        args.out.display(),
        CA_FILE,
        WORLD_CERT_FILE,
        WORLD_KEY_FILE
    );
    println!(
        "  its clients (optional TLS): serve --tls-cert {} --tls-key {}; clients --tls-ca {}",
        at(WORLD_CERT_FILE),
        at(WORLD_KEY_FILE),
        at(CA_FILE)
    );
    let names = |hosts: &[String]| hosts.iter().map(|h| format!(", {h}")).collect::<String>();
    println!(
        "valid for {} days; world.pem for localhost, 127.0.0.1, ::1{}; agent.pem for \
         localhost, 127.0.0.1, ::1{}. The CA's own key was not kept: nothing else can be \
         signed with it.",
        args.days,
        names(&args.hosts),
        names(&args.agent_hosts)
    );
    Ok(())
}
