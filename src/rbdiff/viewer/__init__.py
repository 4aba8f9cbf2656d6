"""See the robot: a 3D viewer in the browser for models, configurations and trajectories.

    import rbdiff as rbd
    from rbdiff.viewer import Viewer
    viz = Viewer(rbd.load_robot("solo12"))        # serves http://127.0.0.1:<port>
    viz.display(q)                                # a configuration (nq,)
    viz.play(qs, dt)                              # (T, nq), or play(result, problem=prob)
    viz.export_html("gait.html", qs, dt)          # one self-contained file, plays offline
    viz.render_gif("gait.gif", qs, dt)            # headless Chromium, no display needed

Built on viser (``pip install 'rbdiff[viewer]'``), chosen over meshcat because:

- offline sharing: viser records a scene with its timing and writes one self-contained
  HTML file (its client, three.js included, and the recording inlined), which plays in
  any browser with no server or network, with a time slider, pause and speed controls;
  meshcat's static HTML has no timeline of its own beyond its animation player;
- trajectory playback: a live time slider and play button are GUI widgets of the page;
- notebooks: ``viz.show()`` embeds the live page in Jupyter (an IFrame), and the
  exported HTML plays in one; the headless renders run the browser in a thread of their
  own, so they work inside a kernel's asyncio loop;
- maintenance: viser is released often (1.x, 2026) with a typed Python API; meshcat-python
  had its last release (0.3.2) in 2021 and needs a ZMQ server process.

Geometry comes from ``model.visuals`` (URDF ``<visual>`` elements, MuJoCo's visible geoms;
see rbdiff.model.visuals), meshes loaded by trimesh; a model without visuals is drawn as
capsules between its joint frames (:mod:`rbdiff.viewer.geometry`). Poses come from
``rbd.frame_placements`` and the centre of mass from ``rbd.center_of_mass``.
"""

from __future__ import annotations

import contextlib
import io
import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .geometry import Camera, fit_camera, frame_points, model_parts

_EXTRA = "pip install 'rbdiff[viewer]'"
_FORCE_RGB = (220, 30, 30)
_POINT_RGB = (240, 200, 0)
_COM_RGB = (20, 170, 60)


def _viser():
    try:
        import viser
        import viser.transforms
    except ImportError as e:
        raise ImportError(f"rbdiff.viewer needs viser: {_EXTRA}") from e
    return viser


def _quiet(on):
    """Silence stdout (viser's rich prints) while ``on``."""
    return contextlib.redirect_stdout(io.StringIO()) if on else contextlib.nullcontext()


def _wxyz(R):
    """Quaternions (..., 4) [w, x, y, z] of rotations (..., 3, 3)."""
    return np.asarray(_viser().transforms.SO3.from_matrix(R).wxyz)


@dataclass
class _Trajectory:
    qs: np.ndarray              # (T, nq)
    dt: float
    contact_frames: tuple       # frame indices
    forces: np.ndarray          # (T, ncontacts, 3) world frame, NaN: not in contact


class Viewer:
    """A viser scene of ``model`` served at :attr:`url` (``port=0``: a free port).

    ``color`` (RGB 0-255) paints the whole robot in one colour (two models side by
    side, or a test that looks for the robot's pixels); otherwise each visual keeps its
    own. ``ground`` draws a 1 m grid on z = 0. ``fast=True`` drops shadows and the
    environment map's lighting (software WebGL, as in a headless browser without a GPU,
    spends seconds on them). ``camera``: a :class:`Camera` for the page, the renders and
    the exported HTML; None fits one (:attr:`camera`, front right, slightly above) to
    each configuration or trajectory shown (:meth:`display`, :meth:`play`,
    :meth:`export_html`, :meth:`render_gif`; a live page's view moves only on Reset
    View). ``browser``: a :class:`~rbdiff.viewer.browser.HeadlessPage` to render with
    (one browser for several viewers; it is left open by :meth:`close`); None starts one
    on the first render.
    """

    def __init__(self, model, *, color=None, host="127.0.0.1", port=0, ground=True,
                 fast=False, camera=None, browser=None, verbose=False):
        import rbdiff as rbd

        viser = _viser()
        self.model = model
        self._rbd = rbd
        with _quiet(not verbose):       # viser prints a banner whatever its verbose says
            self.server = viser.ViserServer(host=host, port=port, verbose=verbose)
        self._verbose = verbose
        scene = self.server.scene
        scene.set_up_direction("+z")
        shadows = not fast
        scene.configure_default_lights(cast_shadow=shadows)
        if fast:
            scene.configure_environment_map(None)
        self.server.gui.configure_theme(show_logo=False, show_share_button=False)
        parts = model_parts(model, color)
        self._frames = np.array(sorted({p.frame for p in parts}), np.int64)
        self._nodes = []
        for k in self._frames:
            name = "/robot/" + model.frames[k].name.replace("/", "_")
            self._nodes.append(scene.add_frame(f"{name}_{k}", show_axes=False))
        slot = {int(k): n for k, n in zip(self._frames, self._nodes)}
        for j, p in enumerate(parts):
            R, t = p.placement[:3, :3], p.placement[:3, 3]
            scene.add_mesh_simple(f"{slot[p.frame].name}/{j}", p.vertices, p.faces,
                                  color=p.rgb, wxyz=_wxyz(R), position=t,
                                  cast_shadow=shadows, receive_shadow=shadows)
        if ground:
            scene.add_grid("/ground", width=10.0, height=10.0, plane="xy", cell_size=0.25,
                           section_size=1.0)
        self._axes = {}             # frame index -> axes handle
        self._com = None
        self._contacts = ((), np.zeros((0, 3)))
        self._contact_nodes = []
        self._arrows = None
        self._force_scale = None
        self._page = None
        self._shared_page = browser
        self._gui = None
        self._lock = threading.RLock()
        self._playing = threading.Lock()
        self.frame_index = None      # the trajectory knot shown last (play, the slider)
        self._traj = None
        self._fast = bool(fast)
        self._auto_camera = camera is None      # refitted to whatever is shown
        if camera is not None:
            self._set_camera(camera)
        self.display(rbd.neutral(model))

    def _set_camera(self, cam):
        """Make ``cam`` the renders' camera and the page's initial (and Reset View) one."""
        self.camera = cam
        ic = self.server.initial_camera
        ic.position, ic.look_at, ic.up = cam.position, cam.look_at, cam.up
        ic.fov = cam.fov

    # -- where things are ---------------------------------------------------------------
    @property
    def url(self):
        """The page's address."""
        host = self.server.get_host()
        return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:" \
               f"{self.server.get_port()}"

    def show(self, height=480):
        """Open the live page: inline in a Jupyter notebook (an IFrame of :attr:`url`,
        ``height`` pixels), else in the default web browser."""
        try:
            from IPython import get_ipython
            from IPython.display import IFrame, display
            if get_ipython() is not None:
                display(IFrame(self.url, width="100%", height=int(height)))
                return
        except ImportError:
            pass
        import webbrowser
        webbrowser.open(self.url)

    def fit_camera(self, qs):
        """A :class:`Camera` that sees the robot's frames at configuration ``qs`` (nq,),
        or over a trajectory (T, nq), from the front right (+x, -y), slightly above
        (:func:`~rbdiff.viewer.geometry.fit_camera`)."""
        qs = np.asarray(qs, dtype=float)
        qs = self._check_q(qs) if qs.ndim == 1 else self._check_qs(qs)
        return fit_camera(frame_points(self._rbd.frame_placements(self.model, qs)))

    def _check_q(self, q):
        q = np.asarray(q, dtype=float)
        if q.shape != (self.model.nq,) or not np.all(np.isfinite(q)):
            raise ValueError(f"q: expected {self.model.nq} finite values (nq), got shape "
                             f"{q.shape}")
        return q

    def _check_qs(self, qs):
        qs = np.asarray(qs, dtype=float)
        nq, nv = self.model.nq, self.model.nv
        if qs.ndim != 2 or qs.shape[1] != nq or len(qs) == 0:
            hint = f"; states x = (q, v) have {nq + nv} columns: pass xs[:, :{nq}]" \
                if qs.ndim == 2 and qs.shape[1] == nq + nv else ""
            raise ValueError(f"trajectory: expected an array of shape (T, nq) = (T, {nq}) "
                             f"configurations, got shape {qs.shape}{hint}")
        if not np.all(np.isfinite(qs)):
            raise ValueError("trajectory: configurations must be finite")
        return np.ascontiguousarray(qs)

    # -- one configuration ------------------------------------------------------------
    def display(self, q):
        """Show configuration ``q`` (nq,) (with the frames, centre of mass and contacts
        that are switched on); without a camera of the user's, refit it to ``q``."""
        q = self._check_q(q)
        oMf = np.asarray(self._rbd.frame_placements(self.model, q))
        if self._auto_camera:
            self._set_camera(fit_camera(frame_points(oMf)))
        self._q = q
        self._redraw(oMf)

    def _redraw(self, oMf=None):
        """Pose everything again at the configuration shown; the camera stays."""
        if oMf is None:
            oMf = np.asarray(self._rbd.frame_placements(self.model, self._q))
        self._show(oMf, self._q, self._contacts)

    def _show(self, oMf, q, contacts):
        """Pose every node from frame placements oMf (nframes, 4, 4)."""
        T = oMf[self._frames]
        quats, pos = _wxyz(T[:, :3, :3]), T[:, :3, 3]
        with self._lock, self.server.atomic():
            for node, w, p in zip(self._nodes, quats, pos):
                node.wxyz, node.position = w, p
            for k, node in self._axes.items():
                node.wxyz, node.position = _wxyz(oMf[k, :3, :3]), oMf[k, :3, 3]
            if self._com is not None:
                self._com.position = np.asarray(self._rbd.center_of_mass(self.model, q))
            self._draw_contacts(oMf, *contacts)

    def show_frames(self, frames=None, show=True, length=0.08):
        """Draw axes (x red, y green, z blue, ``length`` m) on ``frames`` (names or
        indices; None: every frame but the universe), or remove them (``show=False``;
        frames None: all)."""
        scene = self.server.scene
        ids = range(1, len(self.model.frames)) if frames is None else \
            [self.model.get_frame_id(f) if isinstance(f, str) else int(f) for f in frames]
        with self._lock:
            for k in ids:
                if not 0 <= k < len(self.model.frames):
                    raise ValueError(f"frame {k} is not one of the model's "
                                     f"{len(self.model.frames)} frames")
                if k in self._axes:
                    self._axes.pop(k).remove()
                if show:
                    name = self.model.frames[k].name.replace("/", "_")
                    self._axes[k] = scene.add_frame(f"/frames/{name}_{k}", axes_length=length,
                                                    axes_radius=0.06 * length)
        self._redraw()

    def show_com(self, show=True, radius=0.03):
        """Draw (or remove) the centre of mass as a green sphere."""
        with self._lock:
            if self._com is not None:
                self._com.remove()
                self._com = None
            if show:
                self._com = self.server.scene.add_icosphere("/com", radius=radius,
                                                            color=_COM_RGB)
        self._redraw()

    def show_contacts(self, frames=(), forces=None, scale=None):
        """Mark contact points on ``frames`` (names or indices) at the configuration
        shown, with ``forces`` (n, 3) (world frame, newtons) drawn as arrows from them,
        ``scale`` m/N (default: the robot's weight is 0.5 m). ``frames=()`` clears."""
        ids = tuple(self.model.get_frame_id(f) if isinstance(f, str) else int(f)
                    for f in frames)
        f = np.zeros((len(ids), 3)) if forces is None else np.asarray(forces, dtype=float)
        if f.shape != (len(ids), 3):
            raise ValueError(f"forces: expected shape ({len(ids)}, 3), one per contact "
                             f"frame, got {f.shape}")
        if scale is not None:
            self._force_scale = float(scale)
        self._contacts = (ids, f)
        self._redraw()

    def _scale(self):
        if self._force_scale is None:
            weight = float(self._rbd.total_mass(self.model)) * 9.81
            self._force_scale = 0.5 / weight if weight > 0 else 1e-3
        return self._force_scale

    def _draw_contacts(self, oMf, ids, forces):
        """A point on each contact frame whose force row is not NaN, an arrow for each
        non-zero force."""
        scene = self.server.scene
        while len(self._contact_nodes) < len(ids):
            self._contact_nodes.append(scene.add_icosphere(
                f"/contacts/point{len(self._contact_nodes)}", radius=0.015, color=_POINT_RGB))
        arrows = []
        for j, node in enumerate(self._contact_nodes):
            on = j < len(ids) and not np.isnan(forces[j]).any()
            node.visible = bool(on)
            if on:
                p = oMf[ids[j], :3, 3]
                node.position = p
                if np.linalg.norm(forces[j]) > 1e-9:
                    arrows.append([p, p + self._scale() * forces[j]])
        if self._arrows is not None:
            self._arrows.remove()
            self._arrows = None
        if arrows:
            self._arrows = scene.add_arrows("/contacts/forces", np.array(arrows), _FORCE_RGB,
                                            shaft_radius=0.006, head_radius=0.015,
                                            head_length=0.03)

    # -- trajectories -----------------------------------------------------------------
    def _trajectory(self, traj, dt, problem, contacts, forces):
        """qs (T, nq), dt, contact frames and world forces (T, n, 3) of a (T, nq) array
        or a trajopt Result (with its Problem: its dt and each knot's contact forces)."""
        if hasattr(traj, "xs"):             # an rbdiff.trajopt Result
            qs = np.asarray(traj.xs, dtype=float)[:, :self.model.nq]
            if dt is None:
                if problem is None:
                    raise ValueError("play / export a Result: pass dt or problem=")
                dt = problem.dt
            if problem is not None and contacts is None and \
                    getattr(traj, "forces", None) is not None:
                contacts, forces = _result_forces(self.model, problem, traj, qs)
        else:
            qs = traj
        qs = self._check_qs(qs)
        if dt is None or not (float(dt) > 0 and math.isfinite(float(dt))):
            raise ValueError(f"dt: expected a positive time step, got {dt!r}")
        ids = tuple(self.model.get_frame_id(f) if isinstance(f, str) else int(f)
                    for f in (contacts or ()))
        T = len(qs)
        if forces is None:
            F = np.full((T, len(ids), 3), np.nan)
        else:
            F = np.asarray(forces, dtype=float)
            if F.shape[1:] == (len(ids), 3) and len(F) in (T, T - 1):
                F = np.concatenate([F, np.full((T - len(F), len(ids), 3), np.nan)])
            if F.shape != (T, len(ids), 3):
                raise ValueError(f"forces: expected shape ({T}, {len(ids)}, 3) (knots, "
                                 f"contact frames, xyz), got {np.shape(forces)}")
        return _Trajectory(qs, float(dt), ids, F)

    def _frames_of(self, tr):
        """Everything to pose each knot: (oMf (T, nframes, 4, 4))."""
        return np.asarray(self._rbd.frame_placements(self.model, tr.qs))

    def _show_knot(self, tr, oMf, k):
        self._q = tr.qs[k]
        self.frame_index = k
        self._show(oMf[k], tr.qs[k], (tr.contact_frames, tr.forces[k]))

    def play(self, traj, dt=None, *, problem=None, contacts=None, forces=None, speed=1.0,
             block=True):
        """Play a trajectory: ``traj`` (T, nq) configurations ``dt`` s apart, or an
        rbdiff.trajopt Result (its xs; with ``problem=`` its dt and contact forces as
        arrows). ``contacts`` (frame names or indices) and ``forces`` (T, n, 3) world
        frame, NaN where not in contact: arrows from given arrays. Adds a time slider
        and a play button to the page (scrub the trajectory there afterwards). With
        ``block`` (default, as Pinocchio's ``viz.play``) returns once the last knot is
        shown (at ``speed`` times real time); otherwise plays in a thread."""
        tr = self._trajectory(traj, dt, problem, contacts, forces)
        oMf = self._frames_of(tr)
        self._traj = (tr, oMf)
        if self._auto_camera:
            self._set_camera(fit_camera(frame_points(oMf)))
        self._time_gui(tr)
        self._animate(speed, block)

    def _animate(self, speed, block):
        """Show the current trajectory's knots in real time (/ ``speed``), moving the
        page's slider along; one animation at a time."""
        tr, oMf = self._traj
        slider = self._gui[0]
        if not self._playing.acquire(blocking=block):
            return                      # already playing (the page's button, twice)

        def run():
            try:
                t0 = time.perf_counter()
                for k in range(len(tr.qs)):
                    wait = t0 + k * tr.dt / speed - time.perf_counter()
                    if wait > 0:
                        time.sleep(wait)
                    with self._lock:
                        self._show_knot(tr, oMf, k)
                        self._gui_busy = True
                        slider.value = k
                        self._gui_busy = False
            finally:
                self._playing.release()

        if block:
            run()
        else:
            threading.Thread(target=run, daemon=True).start()

    def _time_gui(self, tr):
        """The page's time slider (knots) and play button for trajectory ``tr``."""
        gui = self.server.gui
        if self._gui is not None:
            for h in self._gui:
                h.remove()
        T = len(tr.qs)
        slider = gui.add_slider("knot", min=0, max=max(T - 1, 1), step=1, initial_value=0)
        label = gui.add_markdown(f"{T} knots, dt = {tr.dt:g} s")
        button = gui.add_button("Play")
        self._gui = (slider, label, button)
        self._gui_busy = False

        @slider.on_update
        def _(_event):
            if not self._gui_busy and self._traj is not None:
                trj, oMf = self._traj
                with self._lock:
                    self._show_knot(trj, oMf, min(int(slider.value), len(trj.qs) - 1))

        @button.on_click
        def _(_event):
            self._animate(1.0, block=False)

    # -- sharing ----------------------------------------------------------------------
    def export_html(self, path, traj=None, dt=None, *, problem=None, contacts=None,
                    forces=None, dark_mode=False):
        """Write a self-contained HTML file (viser's client and the recorded scene inline;
        no server or network needed) that shows the current scene, or plays ``traj``
        (as :meth:`play` takes it) with a time slider, looping. Returns the Path."""
        path = Path(path)
        tr = None if traj is None else self._trajectory(traj, dt, problem, contacts, forces)
        with self._lock:
            if tr is not None:
                oMf = self._frames_of(tr)
                if self._auto_camera:
                    self._set_camera(fit_camera(frame_points(oMf)))
                self._show_knot(tr, oMf, 0)
            rec = self.server.get_scene_serializer()
            if tr is not None:
                for k in range(len(tr.qs)):
                    self._show_knot(tr, oMf, k)
                    rec.insert_sleep(tr.dt)
            html = rec.as_html(dark_mode=dark_mode)
        path.write_text(html, encoding="utf-8")
        return path

    def _browser(self, width, height):
        """(page, client id): a headless page connected to this viewer, at least width x
        height CSS pixels."""
        from .browser import HeadlessPage

        size = (max(width, 640), max(height, 480))
        if self._page is not None and self._page[1][0] >= width and \
                self._page[1][1] >= height and self._page[2] in self.server.get_clients():
            return self._page           # (a shared page may have moved to another viewer)
        own = self._shared_page is None
        if self._page is not None and self._page[3]:
            self._page[0].close()
        n = set(self.server.get_clients())
        if own:
            page = HeadlessPage(self.url, *size)
        else:
            page = self._shared_page
            page.call(lambda p: (p.set_viewport_size({"width": max(size[0], p.viewport_size[
                "width"]), "height": max(size[1], p.viewport_size["height"])}),
                p.goto(self.url)))
        deadline = time.time() + 60
        while not set(self.server.get_clients()) - n:
            if time.time() > deadline:
                if own:
                    page.close()
                raise RuntimeError("the headless page did not connect to the viewer")
            time.sleep(0.02)
        self._page = (page, size, max(set(self.server.get_clients()) - n), own)
        if not self._fast:      # the environment map loads after the scene: wait for it
            client = self.server.get_clients()[self._page[2]]
            last, deadline = None, time.time() + 60
            while time.time() < deadline:
                img = client.get_render(60, 80, transport_format="png", timeout=60)
                if last is not None and np.array_equal(img, last):
                    break
                last = img
                time.sleep(0.5)
        return self._page

    def screenshot(self, width=640, height=480, camera=None):
        """An image (height, width, 3) uint8 of the scene as it is, rendered by a
        headless Chromium (started on first use, kept until :meth:`close`) through
        ``camera`` (default :attr:`camera`)."""
        _page, _size, cid, _own = self._browser(width, height)
        cam = self.camera if camera is None else camera
        client = self.server.get_clients()[cid]
        img = client.get_render(int(height), int(width), wxyz=_wxyz(cam.rotation()),
                                position=np.asarray(cam.position, dtype=float),
                                fov=float(cam.fov), transport_format="png", timeout=60)
        rgb = img[..., :3].astype(float)
        if img.shape[-1] == 4:          # transparent background: white, as the page
            a = img[..., 3:4] / 255.0
            rgb = rgb * a + 255.0 * (1.0 - a)
        return np.round(rgb).astype(np.uint8)

    def render_gif(self, path, traj, dt=None, *, problem=None, contacts=None, forces=None,
                   width=480, height=360, camera=None, fps=25, speed=1.0):
        """Render ``traj`` (as :meth:`play` takes it) to an animated GIF at ``path``
        through a headless Chromium, at most ``fps`` frames a second (knots are skipped
        evenly above it), at ``speed`` times real time (0.5: slow motion), looping.
        ``camera`` None: one fitted to the whole trajectory. Returns the Path."""
        from PIL import Image

        path = Path(path)
        if path.suffix.lower() != ".gif":
            raise ValueError(f"render_gif writes a .gif, got {path.name!r}")
        tr = self._trajectory(traj, dt, problem, contacts, forces)
        oMf = self._frames_of(tr)
        cam = camera if camera is not None else \
            fit_camera(frame_points(oMf)) if self._auto_camera else self.camera
        stride = max(1, int(math.ceil(speed / (fps * tr.dt))))
        knots = list(range(0, len(tr.qs), stride))
        if knots[-1] != len(tr.qs) - 1:
            knots.append(len(tr.qs) - 1)
        images = []
        for k in knots:
            with self._lock:
                self._show_knot(tr, oMf, k)
            images.append(Image.fromarray(self.screenshot(width, height, cam)))
        ms = max(20, int(round(1000 * stride * tr.dt / speed)))
        images[0].save(path, save_all=True, append_images=images[1:], duration=ms, loop=0,
                       optimize=True)
        return path

    def close(self):
        """Stop the server and the headless browser, if one was started."""
        if self._page is not None and self._page[3]:
            self._page[0].close()
        self._page = None
        with _quiet(not self._verbose):
            self.server.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _result_forces(model, problem, res, qs):
    """(contact frame indices, forces (T, n, 3) world frame, NaN off contact) from a
    Result's per-knot forces and its Problem's knot contacts."""
    import rbdiff as rbd

    frames = []
    for cs in problem.knot_contacts:
        for c in cs:
            k = model.get_frame_id(c.frame) if isinstance(c.frame, str) else int(c.frame)
            if k not in frames:
                frames.append(k)
    T = len(problem.knot_contacts)
    F = np.full((T, len(frames), 3), np.nan)
    for t, cs in enumerate(problem.knot_contacts):
        row = 0
        for c in cs:
            k = model.get_frame_id(c.frame) if isinstance(c.frame, str) else int(c.frame)
            f = np.asarray(res.forces[t, row:row + 3], dtype=float)
            if c.reference == "local":          # the contact frame's axes: to the world's
                f = np.asarray(rbd.frame_placement(model, qs[t], k))[:3, :3] @ f
            F[t, frames.index(k)] = f
            row += 3 if c.kind == "3d" else 6
    return tuple(frames), F


__all__ = ["Camera", "Viewer"]
