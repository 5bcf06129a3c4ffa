//! Generates the `dramatis.v1` Rust types, clients and servers from `dramatis/v1/*.proto`
//! with a vendored `protoc`, so no system protobuf compiler is needed.

use std::path::PathBuf;

const PROTOS: [&str; 3] = [
    "dramatis/v1/common.proto",
    "dramatis/v1/world.proto",
    "dramatis/v1/agent.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for proto in PROTOS {
        println!("cargo:rerun-if-changed={proto}");
    }
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    tonic_prost_build::configure()
        .file_descriptor_set_path(out_dir.join("dramatis_v1_descriptor.bin"))
        .emit_rerun_if_changed(false)
        .codec_path("crate::codec::StrictCodec")
        // A character new to a story travels in its world's record (JSON).
        .type_attribute(
            "dramatis.v1.SandboxCharacter",
            "#[derive(serde::Serialize, serde::Deserialize)] #[serde(default)]",
        )
        .compile_with_config(config, &PROTOS, &["."])?;
    Ok(())
}
