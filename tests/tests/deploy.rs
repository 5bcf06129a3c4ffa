//! What `deploy/` promises, checked without a container engine or a cluster: the
//! Containerfile builds with the README's own steps, and every manifest the
//! kustomization lists is one `scripts/test.sh` validates against the Kubernetes API.

use dramatis_tests::repo_root;

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The set-up and build commands of `scripts/run.sh` (the README's main command).
fn readme_build_steps() -> Vec<String> {
    read("scripts/run.sh")
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("bash scripts/setup.sh") || l.starts_with("cargo build"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_containerfile_builds_with_the_readme_steps() {
    let steps = readme_build_steps();
    assert_eq!(
        steps,
        ["bash scripts/setup.sh", "cargo build --release -p dramatis"],
        "run.sh's steps"
    );
    let containerfile = read("deploy/Containerfile");
    let build_stage: Vec<&str> = containerfile
        .split("\nFROM ")
        .nth(1)
        .expect("a build stage")
        .lines()
        .filter_map(|l| l.strip_prefix("RUN "))
        .map(str::trim)
        .collect();
    // After preparing the base image, the stage runs exactly those steps, in order.
    let tail = &build_stage[build_stage.len() - steps.len()..];
    assert_eq!(tail, steps.iter().map(String::as_str).collect::<Vec<_>>());
    // The image carries what the binary looks for beside it.
    for dir in ["models", "scenarios", "web"] {
        assert!(
            containerfile.contains(&format!("COPY --from=build /src/{dir} /opt/dramatis/{dir}")),
            "{dir} is copied"
        );
    }
    assert!(containerfile.contains("USER 10001"), "no root at run time");
}

#[test]
fn every_listed_manifest_is_validated_by_the_test_script() {
    let kustomization = read("deploy/k8s/kustomization.yaml");
    let resources: Vec<String> = kustomization
        .split("resources:")
        .nth(1)
        .expect("a resources list")
        .lines()
        .skip(1)
        .map_while(|l| l.trim().strip_prefix("- ").map(str::to_owned))
        .collect();
    assert_eq!(
        resources,
        ["namespace.yaml", "config.yaml", "world.yaml", "agents.yaml"]
    );
    let test_script = read("scripts/test.sh");
    for file in &resources {
        assert!(
            repo_root().join("deploy/k8s").join(file).is_file(),
            "{file} exists"
        );
        assert!(
            test_script.contains(&format!("deploy/k8s/{file}")),
            "scripts/test.sh validates {file}"
        );
    }
    // The world service runs three replicas; the agents scale with an autoscaler.
    let world = read("deploy/k8s/world.yaml");
    assert!(world.contains("replicas: 3"));
    assert!(world.contains("kind: PodDisruptionBudget"));
    let agents = read("deploy/k8s/agents.yaml");
    assert!(agents.contains("kind: HorizontalPodAutoscaler"));
    assert!(
        agents.contains("clusterIP: None"),
        "a headless service for DNS"
    );
}
