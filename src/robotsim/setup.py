"""The bringup package: the robotsim command line, the node graph, the launchers, and the workspace's
top-level launch/ and config/ installed as share/robotsim (``ros2 launch robotsim sim.launch.py``,
``get_package_share_directory('robotsim')``)."""

import os

from setuptools import find_packages, setup

package_name = 'robotsim'
workspace = os.path.join('..', '..')


def tree(folder: str) -> list[tuple[str, list[str]]]:
    """(install folder, files) for every folder under the workspace's ``folder``."""
    found = []
    for root, _, files in os.walk(os.path.join(workspace, folder)):
        if files:
            relative = os.path.relpath(root, workspace)
            found.append((os.path.join('share', package_name, relative), sorted(os.path.join(root, f) for f in files)))
    return sorted(found)


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        *tree('launch'),
        *tree('config'),
    ],
    install_requires=['setuptools'],
    extras_require={'test': ['pytest']},
    zip_safe=False,
    maintainer='robotsim',
    maintainer_email='dev@robotsim.invalid',
    description='robotsim bringup: the robotsim command line, the node graph, launch files and configuration.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': ['robotsim = robotsim.cli:main'],
    },
)
