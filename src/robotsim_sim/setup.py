from setuptools import find_packages, setup

package_name = 'robotsim_sim'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    extras_require={'test': ['pytest']},  # colcon test runs test/ with pytest
    zip_safe=True,
    maintainer='robotsim',
    maintainer_email='dev@robotsim.invalid',
    description='The robotsim simulator node: MuJoCo world stepping, sim time, control services, base/arm actuation.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'sim_node = robotsim_sim.sim_main:main',
            'state_publisher = robotsim_sim.ros.state_publisher:main',
            'monitor = robotsim_sim.ros.monitor_node:main',
            'arm_commander = robotsim_sim.ros.arm_commander:commander_main',
            'pick_place = robotsim_sim.ros.pick_place_node:pick_place_main',
            'stand_up = robotsim_sim.ros.stand_up_node:main',
        ],
    },
)
