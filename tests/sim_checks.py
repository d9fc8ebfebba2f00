"""ROS-free checks on a running Simulation shared by the closed-loop driver tests."""

from __future__ import annotations


def body_collisions(sim, drivable: set[int], robot: int = 0) -> list[str]:
    """This step's contacts of robot ``robot`` that are not a tyre on a drivable geom ('X hit Y')."""
    model, data = sim.model, sim.data
    root = sim.robots[robot].root_body
    found = []
    for contact in data.contact[:data.ncon]:
        ours = [g for g in (contact.geom1, contact.geom2) if model.body_rootid[model.geom_bodyid[g]] == root]
        if len(ours) != 1:
            continue
        other = contact.geom2 if ours[0] == contact.geom1 else contact.geom1
        wheel = 'wheel' in model.body(model.geom_bodyid[ours[0]]).name
        # Tyres on the floor (and on a kerb the base clears) are driving; anything else is a collision.
        if not (wheel and other in drivable):
            found.append(f'{model.body(model.geom_bodyid[ours[0]]).name} hit '
                         f'{model.geom(other).name or model.body(model.geom_bodyid[other]).name}')
    return found
