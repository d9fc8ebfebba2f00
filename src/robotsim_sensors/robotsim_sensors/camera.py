"""Offscreen MuJoCo cameras on the CPU: RGB, depth (REP 118) and segmentation.

One MuJoCo render context serves every camera of a simulation, in a GL context shared by every
simulation of the thread (see :func:`shared_gl_context`). A capture
renders the scene once and reads colour and depth from that same pass; segmentation (optional)
needs a second pass with segmentation colouring. Shadows and reflections are off by default: on
a software renderer they dominate the cost.
"""

from __future__ import annotations

import math
import os
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Literal

import mujoco
import numpy as np

from robotsim_core.config_schema import spec_field
from robotsim_core.contract import LATCHED_QOS, TopicSpec, sensor_qos
from robotsim_core.description.spec import MAX_IMAGE_SIDE, MIN_SENSOR_RATE, NAME_OR_EMPTY, PoseSpec, TopicQosSpec, name_field
from robotsim_core.errors import DescriptionError
from robotsim_core.description.mjcf import OPTICAL_TO_MUJOCO_CAMERA_QUAT, number_text, vector_text
from robotsim_core.sensor_kinds import SensorContext, SensorFrames, SensorKind

from .gl_backend import RenderUnavailable, unavailable_reason
from .readings import CameraReading


@dataclass
class CameraSpec(SensorFrames):
    type: Literal['camera'] = spec_field()
    """Offscreen-rendered camera."""
    name: str = name_field('camera')
    """Sensor name; frames are ``<name>_link`` and ``<name>_optical_frame`` (see ``optical_frame``),
    topics ``/<name>/...``."""
    parent: str = 'base_link'
    """Link the camera body is mounted on."""
    pose: PoseSpec = spec_field(default_factory=PoseSpec)
    """``<name>_link`` in the parent link (REP 103 body frame: x along the view direction)."""
    rate: float = spec_field(15.0, at_least=MIN_SENSOR_RATE, at_most=120.0)
    """Capture rate (Hz)."""
    width: int = spec_field(320, at_least=1, at_most=MAX_IMAGE_SIDE)
    """Image width (px)."""
    height: int = spec_field(240, at_least=1, at_most=MAX_IMAGE_SIDE)
    """Image height (px)."""
    vertical_fov: float = spec_field(1.0, positive=True, at_most=math.pi - 1e-3)
    """Vertical field of view (rad)."""
    near: float = spec_field(0.05, positive=True)
    """Near clip (m)."""
    far: float = spec_field(10.0, positive=True)
    """Far clip (m); depth beyond is +Inf (REP 118)."""
    images: list[Literal['rgb', 'depth', 'segmentation']] = spec_field(default_factory=lambda: ['rgb'], non_empty=True)
    """Images produced by each capture."""
    rgb_noise_stddev: float = spec_field(0.0, non_negative=True)
    """Gaussian pixel noise on 0-255 intensities."""
    depth_noise_stddev: float = spec_field(0.0, non_negative=True)
    """Gaussian depth noise (m)."""
    distortion: tuple[float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0)
    """Lens distortion ``[k1, k2, p1, p2, k3]``: the ``plumb_bob`` model in OpenCV's order, as in
    ``sensor_msgs/CameraInfo`` ``D`` (copy a calibrated camera's D here). Every image is distorted to
    match, about the same K (RGB interpolated bilinearly, depth and segmentation from the nearest pixel),
    and CameraInfo carries it. Barrel distortion (k1 < 0) draws the image's edges from beyond the
    rendered field of view: those pixels have no source (RGB 0, depth +Inf, segmentation -1). All
    zeros (the default) is a pinhole camera; its images are exactly the undistorted render."""
    qos: TopicQosSpec | None = None
    """QoS override for this sensor's topics (default: SensorDataQoS)."""
    optical_frame: str = spec_field('', pattern=NAME_OR_EMPTY)
    """Frame id of the images ('' = ``<name>_optical_frame``). Name it as the real camera's driver
    stamps its images, so both worlds agree: a RealSense (realsense-ros 4.x) stamps colour and aligned
    depth ``<camera_name>_color_optical_frame``."""

    def check(self, source: str, path: str) -> None:
        if self.near >= self.far:
            raise DescriptionError(source, f'{path}.near', f'expected near < far, got {self.near} >= {self.far}')

    @property
    def frame(self) -> str:
        return self.optical_frame or f'{self.name}_optical_frame'

    @property
    def body_frame(self) -> str:
        return f'{self.name}_link'


_thread_contexts = threading.local()  # a GL context is current in one thread at a time: one set per thread


def shared_gl_context(width: int, height: int):
    """This thread's offscreen GL context for renders of up to ``width`` x ``height``, made current.

    Created once and reused by every renderer in the thread: on a CPU renderer (llvmpipe) the
    first MuJoCo render context in a fresh GL context costs some 120 ms of set-up, in a reused
    one a few ms, which a process running one short episode after another (the dataset
    generator) pays per episode otherwise. Each renderer still has its own MuJoCo render context
    (buffers, textures), so what it draws does not depend on what was drawn before."""
    contexts = getattr(_thread_contexts, 'by_size', None)
    if contexts is None:
        contexts = _thread_contexts.by_size = {}
    context = contexts.get((width, height))
    if context is None:
        context = contexts[width, height] = create_gl_context(width, height)
    context.make_current()
    return context


def create_gl_context(width: int, height: int):
    """A current offscreen GL context on the backend chosen by :mod:`.gl_backend`."""
    reason = unavailable_reason()
    if reason:
        raise RenderUnavailable(f'cannot render cameras: {reason}')
    backend = os.environ.get('MUJOCO_GL', '')
    try:
        context = mujoco.GLContext(width, height)
        context.make_current()
        return context
    except Exception as error:  # the GL libraries raise a variety of errors
        raise RenderUnavailable(
            f'cannot create an offscreen OpenGL context with MUJOCO_GL={backend or "(unset)"}: {error}. '
            'Install EGL (Debian: libegl1 libegl-mesa0 libgl1-mesa-dri) or OSMesa (libosmesa6); '
            'scripts/setup.sh installs both.') from None


def _flush() -> None:
    """glFlush: the frame drawn so far starts rendering (in a CPU renderer's own threads)."""
    from OpenGL import GL, error  # MuJoCo's own dependency, set up for its GL backend by now
    try:
        GL.glFlush()
    except error.GLError:
        pass  # PyOpenGL reports errors left by earlier calls (MuJoCo checks none); the flush is done


class CameraRenderer:
    def __init__(self, model: mujoco.MjModel, shadows: bool = False, reflections: bool = False):
        self.model = model
        width, height = model.vis.global_.offwidth, model.vis.global_.offheight
        # No multisampling: reading depth back from a multisampled buffer keeps one sample, which
        # sits off the pixel centre ((-0.125, +0.375) px here), so depth disagreed with CameraInfo
        # and with segmentation. Single-sampled, RGB, depth and segmentation all sample the pixel
        # centre that K describes (registered pixel for pixel), and a pass costs less than half as
        # much on a CPU renderer. The price: RGB edges are not anti-aliased.
        model.vis.quality.offsamples = 0
        self.gl = shared_gl_context(width, height)
        self.context = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_100)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self.context)
        self.scene = mujoco.MjvScene(model, maxgeom=max(1000, 4 * model.ngeom))
        self.option = mujoco.MjvOption()
        self.option.geomgroup[:] = 1  # robots live in groups 2-5, which MuJoCo hides by default
        # Sites mark sensor frames (5 mm spheres inside the robot's parts): not surfaces a camera sees.
        # Left in, each would be one more draw (some 25 us on llvmpipe, ~10 % of a two-rover frame).
        self.option.sitegroup[:] = 0
        self.camera = mujoco.MjvCamera()
        self.camera.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = shadows
        self.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = reflections
        self.scene.flags[mujoco.mjtRndFlag.mjRND_SKYBOX] = False
        extent = model.stat.extent
        self.near = model.vis.map.znear * extent
        self.far = model.vis.map.zfar * extent

    def render(self, data: mujoco.MjData, camera_id: int, width: int, height: int,
               want_rgb: bool, want_depth: bool, want_segmentation: bool, while_drawing=None):
        """(rgb, depth buffer, segmentation) of one camera, rows from the top.

        ``while_drawing``: a callable run once, while the colour and depth pass is being drawn. A
        CPU renderer (llvmpipe) rasterises in its own threads once the pass is flushed, and the
        read-back waits for them; work that needs no pixel (e.g. drawing noise) fits in between."""
        self.gl.make_current()
        # The GL context is shared (shared_gl_context): bind this renderer's own buffer each time.
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self.context)
        self.camera.fixedcamid = camera_id
        viewport = mujoco.MjrRect(0, 0, width, height)
        mujoco.mjv_updateScene(self.model, data, self.option, None, self.camera, mujoco.mjtCatBit.mjCAT_ALL, self.scene)
        rgb = depth = segmentation = None
        if want_rgb or want_depth:
            mujoco.mjr_render(viewport, self.scene, self.context)
            if while_drawing is not None:
                _flush()
                while_drawing()
                while_drawing = None
            rgb = np.empty((height, width, 3), dtype=np.uint8) if want_rgb else None
            depth = np.empty((height, width), dtype=np.float32) if want_depth else None
            mujoco.mjr_readPixels(rgb, depth, viewport, self.context)
        if want_segmentation:
            self.scene.flags[mujoco.mjtRndFlag.mjRND_SEGMENT] = True
            self.scene.flags[mujoco.mjtRndFlag.mjRND_IDCOLOR] = True
            mujoco.mjr_render(viewport, self.scene, self.context)
            colours = np.empty((height, width, 3), dtype=np.uint8)
            mujoco.mjr_readPixels(colours, None, viewport, self.context)
            self.scene.flags[mujoco.mjtRndFlag.mjRND_SEGMENT] = False
            self.scene.flags[mujoco.mjtRndFlag.mjRND_IDCOLOR] = False
            # Colour encodes (scene geom index + 1); map to model geom ids, -1 for background.
            index = (colours[..., 0].astype(np.int32) | (colours[..., 1].astype(np.int32) << 8)
                     | (colours[..., 2].astype(np.int32) << 16)) - 1
            geom_of_index = np.full(self.scene.ngeom + 1, -1, dtype=np.int32)
            for i in range(self.scene.ngeom):
                if self.scene.geoms[i].objtype == mujoco.mjtObj.mjOBJ_GEOM:
                    geom_of_index[i] = self.scene.geoms[i].objid
            index[(index < 0) | (index >= self.scene.ngeom)] = self.scene.ngeom
            segmentation = geom_of_index[index]
        if while_drawing is not None:
            while_drawing()
        # OpenGL rows start at the bottom; images start at the top.
        return (None if rgb is None else np.flipud(rgb), None if depth is None else np.flipud(depth),
                None if segmentation is None else np.flipud(segmentation))

    def close(self) -> None:
        """Free this renderer's GL objects now, in its own GL context. (Left to the garbage
        collector, which may run in another thread whose GL context is current then, MuJoCo would
        delete objects of that context's that happen to have the same ids.) Not usable after."""
        self.gl.make_current()
        self.context.free()

    def linear_depth(self, buffer: np.ndarray, far_limit: float) -> np.ndarray:
        """OpenGL depth buffer -> metres along the optical axis; +Inf where nothing is hit or beyond far."""
        near, far = self.near, self.far
        depth = near / (1.0 - buffer.astype(np.float64) * (1.0 - near / far))
        depth[(buffer >= 1.0) | (depth > far_limit)] = np.inf
        return depth.astype(np.float32)


class Camera:
    def __init__(self, renderer: CameraRenderer, camera_name: str, spec: CameraSpec, geom_labels: np.ndarray):
        self.renderer = renderer
        self.spec = spec
        self.camera_id = renderer.model.camera(camera_name).id
        self.geom_labels = geom_labels  # model geom id -> entity label id
        self._rgb_noise: np.ndarray | None = None  # scratch for the RGB noise draws (float64, H x W x 3)
        # A pinhole camera (all coefficients zero) skips the remap: its images are the render, byte for byte.
        self.lens = LensDistortion(spec) if any(spec.distortion) else None

    def measure(self, data: mujoco.MjData, rng: np.random.Generator, stamp: int) -> CameraReading:
        spec = self.spec
        # Noise: rng.normal(0, s, n) is 0 + s * rng.standard_normal(n), draw for draw from the same
        # stream, so the draws go into one reused buffer and are scaled and applied in place, with
        # the very same values. They are most of a capture's cost on a CPU (230k per 320x240 RGB
        # frame) and need no pixel: the RGB draws are made while the frame is being drawn.
        rgb_noise = 'rgb' in spec.images and spec.rgb_noise_stddev > 0
        if rgb_noise and self._rgb_noise is None:
            self._rgb_noise = np.empty((spec.height, spec.width, 3))
        rgb, depth_buffer, segmentation = self.renderer.render(
            data, self.camera_id, spec.width, spec.height,
            'rgb' in spec.images, 'depth' in spec.images, 'segmentation' in spec.images,
            (lambda: rng.standard_normal(out=self._rgb_noise)) if rgb_noise else None)
        depth = None if depth_buffer is None else self.renderer.linear_depth(depth_buffer, spec.far)
        lens = self.lens
        if lens is not None:
            # The lens bends the light before the sensor adds its noise: distort first, then add noise.
            rgb = None if rgb is None else lens.distort_rgb(rgb)
            depth = None if depth is None else lens.distort_nearest(depth, np.float32(np.inf))
            segmentation = None if segmentation is None else lens.distort_nearest(segmentation, -1)
        if rgb_noise:
            noisy = self._rgb_noise
            noisy *= spec.rgb_noise_stddev
            noisy += rgb
            np.rint(noisy, out=noisy)
            np.clip(noisy, 0, 255, out=noisy)
            rgb = noisy.astype(np.uint8)
            if lens is not None:
                rgb[lens.no_source] = 0  # no light reached those pixels: noise-free black, as documented
        if depth is not None and spec.depth_noise_stddev > 0:
            finite = np.isfinite(depth)
            count = int(np.count_nonzero(finite))
            noise = rng.standard_normal(count)
            noise *= spec.depth_noise_stddev
            if count == depth.size:  # every pixel hit something (the usual indoors): no masked copy
                depth += noise.astype(np.float32).reshape(depth.shape)
            else:
                depth[finite] += noise.astype(np.float32)
        labels = None
        if segmentation is not None:
            labels = np.where(segmentation >= 0, self.geom_labels[np.maximum(segmentation, 0)], -1).astype(np.int32)
        return CameraReading(stamp, rgb, depth, labels)


class LensDistortion:
    """A camera's ``plumb_bob`` lens distortion (``CameraSpec.distortion``), applied to its pinhole renders.

    MuJoCo renders a pinhole image with the camera's K. The distorted image has the same K: its pixel
    (u, v) sees what the pinhole image shows at ``undistort(u, v)``, the inverse of the plumb_bob model
    (which has no closed form; OpenCV iterates). The table of those source points is built once per
    camera; each capture is then one remap per image. RGB is interpolated bilinearly; depth and
    segmentation take the nearest pinhole pixel, so no depth is ever blended across an edge and no label
    id invented. Pixels whose source lies outside the render (barrel distortion pulls the edges in from
    beyond the field of view) or that the model folds over get no source: RGB 0, depth +Inf (REP 118:
    no return), segmentation -1.

    Note: ``cv2.initUndistortRectifyMap`` maps the other way (undistorted pixel -> distorted point), the
    table for *correcting* a real camera's image; used here it put the corners of a 320 x 240 camera
    (vertical field of view 0.9 rad, k1 = -0.25, k2 = 0.08) 52 px away from where they belong."""

    ROUND_TRIP_TOLERANCE = 1e-3
    """Largest error (px) of distort(undistort(pixel)) for a pixel to count as having a source: beyond
    it the iteration found no inverse (the model folds over there)."""

    def __init__(self, spec: CameraSpec):
        import cv2  # only distorted cameras need OpenCV: a pinhole camera never loads it
        self._cv2 = cv2
        fx, fy, cx, cy = intrinsics(spec)
        camera_matrix = np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])
        coefficients = np.array(spec.distortion, dtype=np.float64)
        width, height = spec.width, spec.height
        rows, columns = np.mgrid[0:height, 0:width]
        pixels = np.stack([columns.ravel(), rows.ravel()], -1).astype(np.float64)
        # OpenCV's default 5 iterations leave up to 0.02 px in the corners of a k1 = -0.25 lens: iterate
        # to convergence instead (about 20 ms for 320 x 240, once).
        criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 100, 1e-12)
        if hasattr(cv2, 'undistortPointsIter'):  # OpenCV 4 (a full ROS install's python3-opencv)
            source = cv2.undistortPointsIter(pixels.reshape(-1, 1, 2), camera_matrix, coefficients, None,
                                             camera_matrix, criteria)
        else:  # OpenCV 5 folded the criteria into undistortPoints
            source = cv2.undistortPoints(pixels.reshape(-1, 1, 2), camera_matrix, coefficients, None, camera_matrix,
                                         criteria=criteria)
        source = source.reshape(-1, 2)
        rays = np.column_stack([(source[:, 0] - cx) / fx, (source[:, 1] - cy) / fy, np.ones(len(source))])
        finite = np.all(np.isfinite(rays), axis=1)
        rays[~finite] = (0.0, 0.0, 1.0)
        back, _ = cv2.projectPoints(rays, np.zeros(3), np.zeros(3), camera_matrix, coefficients)
        round_trip = np.linalg.norm(back.reshape(-1, 2) - pixels, axis=1)
        # Keep the far-off sources of a folded model finite and small before rounding them to integers.
        source = np.clip(np.nan_to_num(source, nan=-1.0), -1.0, max(width, height))
        nearest = np.rint(source).astype(np.int64)
        has_source = (finite & (round_trip < self.ROUND_TRIP_TOLERANCE)
                      & (nearest[:, 0] >= 0) & (nearest[:, 0] < width) & (nearest[:, 1] >= 0) & (nearest[:, 1] < height))
        self.no_source = ~has_source.reshape(height, width)  # H x W: pixels that see nothing of the render
        self.source_rows = np.where(has_source, nearest[:, 1], 0).reshape(height, width)
        self.source_columns = np.where(has_source, nearest[:, 0], 0).reshape(height, width)
        # Fixed-point maps: what cv2.remap converts float maps to anyway, done once here.
        self.map_fixed, self.map_fraction = cv2.convertMaps(
            source[:, 0].reshape(height, width).astype(np.float32), source[:, 1].reshape(height, width).astype(np.float32),
            cv2.CV_16SC2)

    def distort_rgb(self, rgb: np.ndarray) -> np.ndarray:
        """H x W x 3 uint8 pinhole image -> the distorted image (bilinear; no-source pixels 0)."""
        cv2 = self._cv2
        # Border replicate: a source up to half a pixel beyond the edge still rounds to an edge pixel
        # (it has a source in depth and segmentation too), so it takes that pixel's colour, not black's.
        out = cv2.remap(np.ascontiguousarray(rgb), self.map_fixed, self.map_fraction, cv2.INTER_LINEAR,
                        borderMode=cv2.BORDER_REPLICATE)
        out[self.no_source] = 0
        return out

    def distort_nearest(self, image: np.ndarray, no_source_value) -> np.ndarray:
        """H x W depth or segmentation -> the distorted image, each pixel from the nearest source pixel."""
        out = image[self.source_rows, self.source_columns]
        out[self.no_source] = no_source_value
        return out


def intrinsics(spec: CameraSpec) -> tuple[float, float, float, float]:
    """(fx, fy, cx, cy) of a pinhole camera matching MuJoCo's rendering: square pixels,
    fy = (H/2) / tan(fovy/2), principal point at the image centre."""
    focal = (spec.height / 2.0) / math.tan(spec.vertical_fov / 2.0)
    return focal, focal, (spec.width - 1) / 2.0, (spec.height - 1) / 2.0


IMAGE_TOPIC_STEMS = {'rgb': '', 'depth': 'depth/', 'segmentation': 'segmentation/'}
"""Image kind -> topic stem under the camera's name (realsense-ros/image_pipeline style)."""


def topics(role, model) -> list[TopicSpec]:
    """Per image kind ``<name>/<stem>image_raw`` + ``camera_info``; segmentation also a latched label table."""
    spec = role.spec
    qos = sensor_qos(spec)
    out = []
    for image in spec.images:
        stem = IMAGE_TOPIC_STEMS[image]
        out.append(TopicSpec(f'{role.name}/{stem}image_raw', 'sensor_msgs/msg/Image', role.frame, qos, spec.rate,
                             role.name))
        out.append(TopicSpec(f'{role.name}/{stem}camera_info', 'sensor_msgs/msg/CameraInfo', role.frame, qos,
                             spec.rate, role.name))
    if 'segmentation' in spec.images:
        # JSON {label id: entity name}, latched, so a late subscriber can read the ids.
        out.append(TopicSpec(f'{role.name}/segmentation/labels', 'std_msgs/msg/String', '', LATCHED_QOS, 0.0,
                             role.name, sim_only=True))
    return out


def add_mjcf(root: ET.Element, body: ET.Element, role) -> None:
    """A MuJoCo camera named as the sensor in its optical frame's body, looking down the optical +z."""
    spec = role.spec
    ET.SubElement(body, 'camera', name=role.name, quat=vector_text(OPTICAL_TO_MUJOCO_CAMERA_QUAT),
                  fovy=number_text(math.degrees(spec.vertical_fov)),  # MuJoCo's fovy is always in degrees
                  resolution=f'{spec.width} {spec.height}')


def make(context: SensorContext) -> Camera | None:
    if context.renderer is None:
        return None  # rendering is off (cameras:=false): the camera produces nothing
    return Camera(context.renderer, context.name(context.role.name), context.role.spec, context.geom_labels)


KIND = SensorKind('camera', CameraSpec, topics, make, add_mjcf, renders=True)
