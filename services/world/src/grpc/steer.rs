//! The calls that steer a story: the director's events, a fork, a line asked again.
//! Each runs at the world's owner and to completion, as an advance does.

use dramatis_proto::v1 as pb;
use tonic::{Request, Response, Status};

use super::handle::{WorldGrpc, required, routed, to_completion};
use crate::cluster::peers::forwarded;
use crate::registry::Place;
use crate::world::Intervention;

impl WorldGrpc {
    pub(super) async fn direct(
        &self,
        request: Request<pb::InterveneRequest>,
    ) -> Result<Response<pb::InterveneResponse>, Status> {
        let (metadata, _, request) = request.into_parts();
        required(&request.world_id, "world_id")?;
        let intervention = Intervention::try_from(&request).map_err(Status::from)?;
        routed!(
            self,
            metadata,
            &request.world_id,
            request,
            intervene,
            |world| {
                to_completion(self.worlds.tasks(), async move {
                    let event = world.intervene(intervention).await.map_err(Status::from)?;
                    Ok(Response::new(pb::InterveneResponse {
                        event: Some(event),
                        world: Some(world.info()),
                    }))
                })
                .await
            }
        )
    }

    pub(super) async fn branch(
        &self,
        request: Request<pb::ForkRequest>,
    ) -> Result<Response<pb::WorldInfo>, Status> {
        let (metadata, _, request) = request.into_parts();
        required(&request.world_id, "world_id")?;
        routed!(self, metadata, &request.world_id, request, fork, |world| {
            let worlds = self.worlds.clone();
            let (at_seq, new_id) = (request.at_seq, request.new_world_id.clone());
            to_completion(self.worlds.tasks(), async move {
                let fork = worlds.fork(&world, at_seq, Some(new_id)).await?;
                Ok(Response::new(fork.info()))
            })
            .await
        })
    }

    pub(super) async fn ask_again(
        &self,
        request: Request<pb::RegenerateRequest>,
    ) -> Result<Response<pb::AdvanceResponse>, Status> {
        let (metadata, _, request) = request.into_parts();
        required(&request.world_id, "world_id")?;
        routed!(
            self,
            metadata,
            &request.world_id,
            request,
            regenerate,
            |world| {
                let worlds = self.worlds.clone();
                let new_id = request.new_world_id.clone();
                to_completion(self.worlds.tasks(), async move {
                    let (fork, events) = worlds.regenerate(&world, Some(new_id)).await?;
                    Ok(Response::new(pb::AdvanceResponse {
                        events,
                        world: Some(fork.info()),
                    }))
                })
                .await
            }
        )
    }
}
