from setuptools import find_packages, setup

package_name = 'robotsim_learning'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    # robotsim render: bpy's pins (requirements/render.txt links here) and the script run inside bpy's env;
    # the LeRobot reader's likewise (requirements/lerobot.txt).
    package_data={'robotsim_learning.render': ['requirements.txt', 'blender_side.py'],
                  'robotsim_learning.lerobot_reader': ['requirements.txt', 'lerobot_side.py']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    extras_require={'test': ['pytest']},  # colcon test runs test/ with pytest
    zip_safe=True,
    maintainer='robotsim',
    maintainer_email='dev@robotsim.invalid',
    description='Rosbag recording, dataset generation, policy training and closed-loop evaluation for robotsim.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'driver = robotsim_learning.ros.driver_node:main',
            'wander = robotsim_learning.ros.driver_node:wander',
            'expert = robotsim_learning.ros.driver_node:expert',
            'policy = robotsim_learning.ros.driver_node:policy',
            'straight = robotsim_learning.ros.driver_node:straight',
            'recorder = robotsim_learning.ros.recorder_node:main',
            'viewer = robotsim_learning.ros.viewer_node:main',
        ],
        # The robotsim command's verbs this package adds (robotsim.cli reads the group): words joined by dots.
        'robotsim.commands': [
            'bag.info = robotsim_learning.bag_cli.info',
            'bag.repair = robotsim_learning.bag_cli.repair',
            'dataset = robotsim_learning.dataset_cli',
            'policy.train = robotsim_learning.policy_cli',
            'policy.eval = robotsim_learning.evaluation_cli',
            'perception.train = robotsim_learning.perception_cli',
            'view = robotsim_learning.viewer_cli',
            'render = robotsim_learning.render.cli',
        ],
    },
)
