"""How often a room starting together tells two learners' servers the same port (deploy/jupyterhub).

    .venv/bin/python benchmarks/learner_ports.py [--learners 45] [--rooms 2000]

JupyterHub's LocalProcessSpawner picks each server's port with `jupyterhub.utils.random_port` (bind to port 0,
read the port, close) and the server binds it seconds later. When a room starts together, every learner's port is
picked before the first server has bound its own, so nothing stops the kernel from handing the same port out twice.
For `--rooms` rooms this picks `--learners` ports that way, holding none of them, and counts the rooms in which two
learners got the same port: in each such room one server cannot start. Then the same with the course's
`OwnPortSpawner` choice (`quiet_port_run`, below the ephemeral range, avoiding the ports already told). Nothing is
started: only the choice is measured.
"""

from __future__ import annotations

from jupyterhub.utils import random_port

from tinyagent.command_options import OneLineParser, whole_number
from tinyagent.hosting.address import quiet_port_run


def rooms_with_a_shared_port(pick, learners: int, rooms: int) -> int:
    shared = 0
    for _ in range(rooms):
        told: list[int] = []
        for _ in range(learners):
            told.append(pick(told))
        shared += len(set(told)) < learners
    return shared


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=whole_number("--learners", 1000, "a room, not every free port",
                                                        lowest=2), default=45,
                        help="learners starting together (default 45)")
    parser.add_argument("--rooms", type=whole_number("--rooms", 100_000, "each room picks every learner's port"),
                        default=2000, help="rooms to try (default 2000)")
    args = parser.parse_args(argv)
    ways = {
        "JupyterHub's random_port": lambda told: random_port(),
        "OwnPortSpawner (quiet_port_run)": lambda told: quiet_port_run(avoid=told),
    }
    print(f"{args.rooms} rooms of {args.learners} learners, every port picked before any server binds its own")
    for name, pick in ways.items():
        shared = rooms_with_a_shared_port(pick, args.learners, args.rooms)
        print(f"  {name:32} two learners told the same port in {shared} rooms ({shared / args.rooms:.1%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
