"""Total mass of each URDF given as PyBullet 3.2.7 and Drake 1.51.1 load it (run in the peers' environment).

Usage: python masses.py A.urdf [B.urdf ...]; prints one line RESULT {path: {"pybullet": kg, "drake": kg}}.
"""

import json
import sys

import pybullet
from pydrake.multibody.parsing import Parser
from pydrake.multibody.plant import MultibodyPlant


def pybullet_mass(path: str) -> float:
    client = pybullet.connect(pybullet.DIRECT)
    try:
        body = pybullet.loadURDF(path, flags=pybullet.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
        links = range(-1, pybullet.getNumJoints(body, physicsClientId=client))  # -1: the base
        return sum(pybullet.getDynamicsInfo(body, link, physicsClientId=client)[0] for link in links)
    finally:
        pybullet.disconnect(client)


def drake_mass(path: str) -> float:
    plant = MultibodyPlant(0.0)
    (model,) = Parser(plant).AddModels(path)
    plant.Finalize()
    context = plant.CreateDefaultContext()
    return sum(plant.get_body(index).get_mass(context) for index in plant.GetBodyIndices(model))


if __name__ == '__main__':
    masses = {path: {'pybullet': pybullet_mass(path), 'drake': drake_mass(path)} for path in sys.argv[1:]}
    print('\nRESULT', json.dumps(masses), flush=True)
