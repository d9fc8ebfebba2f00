"""``robotsim view BAG --out run.html``: one offline HTML file replaying a bag (ROS-free).

The robot description comes from, in order: ``--robot``, the ``robot.yaml`` a dataset episode keeps beside
its bag, the bag's ``/robot_description`` (URDF text); the world from ``--world`` or the episode's
``world.yaml`` (a ``record:=true`` recording does not hold its world: pass ``--world``). What cannot be
found is said on the page.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..description.model import RobotModel
from ..errors import DescriptionError
from .bag_scene import MAX_IMAGE_RATE, SceneData, joint_table, read_bag, summary_line
from .gltf import build_scene, scene_glb
from .page import render_page


def model_from_urdf(text: str, source: str) -> RobotModel:
    """A drawable model of a URDF (meshes resolved through the ament index and package folders): no
    drive or sensor roles, root link = base."""
    from ..description.urdf import urdf_to_tree

    tree = urdf_to_tree(text, source)
    root = tree.root()
    return RobotModel(name=tree.name, source=source, tree=tree, base_link=root, footprint_link=root, drive=None)


def bag_folder(bag: str | os.PathLike) -> Path:
    path = Path(bag)
    return path.parent if path.is_file() else path


def robot_beside(bag: str | os.PathLike, notes: list[str]) -> RobotModel | None:
    """The robot.yaml a dataset episode keeps beside its bag, or None."""
    beside = bag_folder(bag) / 'robot.yaml'
    if not beside.is_file():
        return None
    from ..description import load_robot
    try:
        return load_robot(str(beside))
    except DescriptionError as error:
        notes.append(f'robot.yaml beside the bag cannot be used: {error}')
        return None


def scene_json(scene: SceneData, model: RobotModel | None, world, title: str) -> dict:
    data = scene.as_json()
    data.update(title=title, robot=model.name if model else None, world=getattr(world, 'name', None),
                root_link=model.tree.root() if model else None)
    return data


def write_replay(bag: str | os.PathLike, out: str | os.PathLike, robot: RobotModel | None = None, world=None,
                 namespace: str = '', image_rate: float = MAX_IMAGE_RATE) -> str:
    """Write the replay page of ``bag`` to ``out`` (``world``: a ``robotsim_sim`` WorldSpec or None);
    returns a one-line summary."""
    html, summary = replay_page(bag, robot, world, namespace, image_rate)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(html, encoding='utf-8')
    size = len(html.encode('utf-8'))
    return f'wrote {out} ({size / 1e6:.1f} MB): {summary}'


def replay_page(bag: str | os.PathLike, robot: RobotModel | None = None, world=None, namespace: str = '',
                image_rate: float = MAX_IMAGE_RATE) -> tuple[str, str]:
    """(the replay page of ``bag`` as one offline HTML document, a one-line summary of what it shows)."""
    early_notes: list[str] = []
    model = robot or robot_beside(bag, early_notes)
    scene = read_bag(bag, model, namespace, max_image_rate=image_rate)
    scene.notes[:0] = early_notes
    source = model.source if model is not None else ''
    if model is None and scene.robot_description:
        try:
            model = model_from_urdf(scene.robot_description, 'the robot description in the bag')
            source = '/robot_description in the bag'
            scene.joints = joint_table(model)
            scene.notes = [note for note in scene.notes if not note.startswith('no robot description')]
        except DescriptionError as error:
            scene.notes.append(f'the bag\'s robot description cannot be drawn: {error}')
    if world is None:
        scene.notes.append('no world description (the bag holds no /sim/scenario and no world.yaml lies beside it): '
                           'pass --world NAME to draw the world')
    title = f'{Path(bag).name}: {model.name if model else "robot"}' + (f' in {world.name}' if world else '')
    glb = scene_glb(build_scene(model, world)) if model is not None or world is not None else None
    html = render_page(scene_json(scene, model, world, title), glb, title)
    return html, (f'{summary_line(scene)}; robot {model.name + " from " + source if model else "none"}; '
                  f'world {world.name if world else "none"}')
