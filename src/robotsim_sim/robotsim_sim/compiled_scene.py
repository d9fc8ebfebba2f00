"""A world and its robots compiled into one MuJoCo model, with what names the things in it: each robot's
binding (its elements' ids and addresses) and the segmentation label of every geom. What a :class:`Simulation`
starts from, and all that a reader of a recording (the Blender render) needs, without controllers, sensors or
firmware."""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from robotsim_core.description.world_spec import WorldSpec

from .binding import RobotBinding
from .scene import RobotPlacement, build_scene, compile_scene


@dataclass
class CompiledScene:
    """One compiled scene (see the module docstring); owns nothing that needs closing."""

    spec: mujoco.MjSpec
    """The scene as MuJoCo's model spec (``spec.to_xml()`` gives its MJCF)."""
    model: mujoco.MjModel
    """The compiled model."""
    bindings: list[RobotBinding]
    """Per robot, in placement order: MuJoCo ids and addresses of its elements."""
    geom_labels: np.ndarray
    """Model geom id -> segmentation label id."""
    labels: dict[int, str]
    """Segmentation label id -> what it is: 0 the world (floor, walls, static boxes), then each free body and
    robot (by namespace or model name)."""

    @classmethod
    def compile(cls, world: WorldSpec, placements: list[RobotPlacement]) -> CompiledScene:
        spec = build_scene(world, placements)
        model = compile_scene(spec, world, placements)
        bindings = [RobotBinding.bind(model, p.model, p.prefix) for p in placements]
        geom_labels, labels = segmentation_labels(model, placements, bindings)
        return cls(spec, model, bindings, geom_labels, labels)


def segmentation_labels(model: mujoco.MjModel, placements: list[RobotPlacement], bindings: list[RobotBinding]):
    """Entity label per geom: 0 floor/walls/static world, one id per free body or robot."""
    labels = {0: 'world'}
    geom_labels = np.zeros(model.ngeom, dtype=np.int32)
    names = {}
    for geom in range(model.ngeom):
        root = model.body_rootid[model.geom_bodyid[geom]]
        if root == 0:
            name = model.geom(geom).name or 'world'
            name = name if not name.startswith('wall_') and name != 'floor' else 'world'
        else:
            name = model.body(root).name
            for placement, binding in zip(placements, bindings):
                if root == binding.root_body:
                    name = placement.namespace or placement.model.name
        if name not in names:
            names[name] = 0 if name == 'world' else len(names) + 1
            labels[names[name]] = name
        geom_labels[geom] = names[name]
    return geom_labels, labels
