import glob

from setuptools import find_packages, setup

package_name = 'robotsim_firmware'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        # The C firmware ships with the package: the simulator builds its host library from it.
        *[('share/' + package_name + '/' + folder, glob.glob(folder + '/*.[ch]') + glob.glob(folder + '/*.ld'))
          for folder in ('firmware/src', 'firmware/host', 'firmware/mcu', 'firmware/power')],
        ('share/' + package_name + '/firmware', ['firmware/Makefile']),
    ],
    install_requires=['setuptools'],
    extras_require={'test': ['pytest']},  # colcon test runs test/ with pytest
    zip_safe=True,
    maintainer='robotsim',
    maintainer_email='dev@robotsim.invalid',
    description='The base MCU firmware (C) with its HAL, host build for firmware-in-the-loop, serial protocol and '
                'motor bridge node.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': ['motor_bridge = robotsim_firmware.ros.bridge_node:main'],
    },
)
