from setuptools import find_packages, setup

package_name = 'robotsim_sensors'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='robotsim',
    maintainer_email='dev@robotsim.invalid',
    description='Sensor kinds of robotsim (lidar, camera, IMU, range, navsat: spec, MuJoCo elements, model, topics) '
                'and their conversion to sensor_msgs.',
    license='Apache-2.0',
    # The sensor kinds the core finds by YAML `type` (robotsim_core.sensor_kinds): one row per kind.
    entry_points={
        'robotsim.sensor_kinds': [
            'lidar = robotsim_sensors.lidar:KIND',
            'camera = robotsim_sensors.camera:KIND',
            'imu = robotsim_sensors.imu:KIND',
            'range = robotsim_sensors.range_sensor:KIND',
            'navsat = robotsim_sensors.navsat:KIND',
            'force_torque = robotsim_sensors.force_torque:KIND',
            'contact = robotsim_sensors.contact:KIND',
        ],
    },
)
