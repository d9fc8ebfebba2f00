"""``camera`` readings -> Image + CameraInfo per image kind (rgb8, 32FC1 depth, 32SC1 labels)."""

from __future__ import annotations

from robotsim_sensors.ros import messages as build
from robotsim_sensors.camera import IMAGE_TOPIC_STEMS


def converter(role, frame_id: str, topics: list):
    info = build.camera_info(role.spec, frame_id)  # one per camera, restamped per capture
    names = {(kind, suffix): f'{role.name}/{stem}{suffix}' for kind, stem in IMAGE_TOPIC_STEMS.items()
             for suffix in ('image_raw', 'camera_info')}

    def convert(reading, stamp) -> list:
        info.header.stamp = stamp
        out = []
        for kind, image in build.camera_images(reading, frame_id, stamp).items():
            out.append((names[kind, 'image_raw'], image))
            out.append((names[kind, 'camera_info'], info))
        return out
    return convert
