"""A client generated from proto/ by another gRPC implementation (Python grpcio) drives a
real `dramatis serve`: reflection, create, advance, watch, ask; and a `dramatis agent`
on mutual TLS with certificates from `dramatis certs`, which answers grpcio holding the
world's certificate and refuses it without one. Run by scripts/test.sh.

Usage: python grpc_client_check.py <path-to-dramatis-binary>
"""

import os
import subprocess
import sys
import tempfile
import threading

import grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_tools import protoc

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROTO = os.path.join(ROOT, "proto")


def generate(out):
    files = [os.path.join("dramatis", "v1", f) for f in ("common.proto", "world.proto", "agent.proto")]
    args = ["protoc", f"-I{PROTO}", f"--python_out={out}", f"--grpc_python_out={out}", *files]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    sys.path.insert(0, out)


STARTED = []


def start(binary, *args):
    """Starts `dramatis ARGS`; stopped by `stop_all` however the check ends."""
    proc = subprocess.Popen([binary, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    STARTED.append(proc)
    for line in proc.stdout:
        if line.startswith("DRAMATIS_READY "):
            return proc, line.split()[1]
    raise SystemExit(f"dramatis {args[0]} did not start")


def stop_all():
    for proc in STARTED:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def services(address, credentials=None):
    channel = grpc.secure_channel(address, credentials) if credentials else grpc.insecure_channel(address)
    with channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        for response in stub.ServerReflectionInfo(iter([request])):
            return {s.name for s in response.list_services_response.service}
    return set()


def main():
    binary = sys.argv[1]
    passed = 0
    checks = []

    def check(name, condition, detail=""):
        nonlocal passed
        checks.append(name)
        if not condition:
            raise SystemExit(f"FAILED {name}: {detail}")
        passed += 1
        print(f"ok  {name}")

    with tempfile.TemporaryDirectory() as tmp:
        generate(tmp)
        from dramatis.v1 import common_pb2, world_pb2, world_pb2_grpc  # noqa: E402

        from dramatis.v1 import agent_pb2, agent_pb2_grpc  # noqa: E402

        certs = os.path.join(tmp, "certs")
        subprocess.run([binary, "certs", "--out", certs], check=True, stdout=subprocess.DEVNULL, cwd=ROOT)

        def read(name):
            with open(os.path.join(certs, name), "rb") as f:
                return f.read()

        as_world = grpc.ssl_channel_credentials(read("ca.pem"), read("world.key"), read("world.pem"))
        anonymous = grpc.ssl_channel_credentials(read("ca.pem"))
        _, world_addr = start(binary, "serve", "--listen", "127.0.0.1:0", "--scripted", "builtin", "--data-dir", os.path.join(tmp, "data"))
        _, agent_addr = start(binary, "agent", "--listen", "127.0.0.1:0", "--scripted", "builtin", "--tls", certs, "--data-dir", os.path.join(tmp, "shards"))
        check("reflection lists the World service", "dramatis.v1.World" in services(world_addr))
        check("reflection lists the Agent service over mutual TLS", "dramatis.v1.Agent" in services(agent_addr, as_world))
        with grpc.secure_channel(agent_addr, anonymous) as channel:
            request = agent_pb2.SnapshotRequest(character=agent_pb2.CharacterRef(world_id="w", character_id="watson"))
            try:
                agent_pb2_grpc.AgentStub(channel).Snapshot(request)
                check("an agent refuses a caller without the world's certificate", False)
            except grpc.RpcError as error:
                check("an agent refuses a caller without the world's certificate", error.code() == grpc.StatusCode.UNAUTHENTICATED, error)
        channel = grpc.insecure_channel(world_addr)
        world = world_pb2_grpc.WorldStub(channel)
        created = world.CreateWorld(world_pb2.CreateWorldRequest(scenario_name="study-in-scarlet"))
        check("create a world", created.total_scenes == 4 and len(created.characters) == 4, created)

        seen = []
        done = threading.Event()

        def follow():
            for item in world.Watch(world_pb2.WatchRequest(world_id=created.world_id, from_seq=1)):
                if item.HasField("event"):
                    seen.append(item.event.seq)
                    if item.event.kind == common_pb2.EVENT_KIND_SCENE_END:
                        done.set()
                        return

        watcher = threading.Thread(target=follow, daemon=True)
        watcher.start()
        advanced = world.Advance(world_pb2.AdvanceRequest(world_id=created.world_id, scene_end=True))
        check("advance one scene", advanced.events[-1].kind == common_pb2.EVENT_KIND_SCENE_END)
        check("watch receives the scene in order", done.wait(10) and seen == [e.seq for e in advanced.events], seen)
        answer = world.Ask(world_pb2.AskRequest(world_id=created.world_id, character="watson", question="Where are you?"))
        check("ask a character", answer.character == "watson" and answer.answer != "", answer)
        try:
            world.GetWorld(world_pb2.GetWorldRequest(world_id="nope"))
            check("unknown world is NOT_FOUND", False)
        except grpc.RpcError as error:
            check("unknown world is NOT_FOUND", error.code() == grpc.StatusCode.NOT_FOUND, error)
        stop_all()  # before their data directory is removed
    print(f"grpcio: {passed} passed, {len(checks) - passed} failed")


if __name__ == "__main__":
    try:
        main()
    finally:
        stop_all()
