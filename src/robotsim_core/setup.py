from setuptools import find_packages, setup

package_name = 'robotsim_core'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    # The viewer page's script, style and the vendored three.js modules (with their LICENSE and VENDOR.json).
    package_data={'robotsim_core.viewer': ['web/*.html', 'web/*.js', 'web/*.css', 'web/vendor/three/LICENSE',
                                           'web/vendor/three/VENDOR.json', 'web/vendor/three/build/*.js',
                                           'web/vendor/three/examples/jsm/*/*.js']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    extras_require={'test': ['pytest']},  # colcon test runs test/ with pytest
    zip_safe=False,
    maintainer='robotsim',
    maintainer_email='dev@robotsim.invalid',
    description='ROS-free core of robotsim: robot description -> URDF + MuJoCo model, frames, kinematics, config loading.',
    license='Apache-2.0',
)
