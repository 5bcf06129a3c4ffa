//! Standard gRPC services every Dramatis server carries: health checking and server
//! reflection over the `dramatis.v1` descriptors.

use tonic_health::server::HealthReporter;

/// The health service (reporting `service_name` as serving) and the reflection service.
pub async fn standard_services(
    service_name: &str,
) -> Result<
    (
        tonic_health::pb::health_server::HealthServer<impl tonic_health::pb::health_server::Health>,
        tonic_reflection::server::v1::ServerReflectionServer<
            impl tonic_reflection::server::v1::ServerReflection,
        >,
        HealthReporter,
    ),
    tonic_reflection::server::Error,
> {
    let (reporter, health) = tonic_health::server::health_reporter();
    reporter
        .set_service_status(service_name, tonic_health::ServingStatus::Serving)
        .await;
    reporter
        .set_service_status("", tonic_health::ServingStatus::Serving)
        .await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(dramatis_proto::v1::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    Ok((health, reflection, reporter))
}
